/* The release explorer (pipelines/release/explorer.py writes its data).
 *
 * Opens from disk: data/index.js says what there is, and each page of cards is a script
 * data/<path>/<page>.js that calls EXPLORER.page(id, cards) when the page is shown
 * (browsers refuse to fetch file:// URLs but load scripts from them). The route is the URL's
 * hash, so a page can be bookmarked and the back button works:
 *   #items/<view>/<group>/<page>   #rejects   #rejects/<reason>/<page>
 *   #diff   #diff/<table>/<kind>/<page>
 * Text goes into the page as text (never as HTML); images only from thumbs/.
 */
"use strict";
var EXPLORER = (function () {
  var data = null, pages = {}, failed = {};

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function load(id) {
    if (pages[id] || failed[id] || document.getElementById("page:" + id)) return;
    var script = el("script", {id: "page:" + id, src: "data/" + id + ".js"});
    script.onerror = function () { failed[id] = true; render(); };
    document.head.appendChild(script);
  }

  function route() {
    var parts = decodeURIComponent(location.hash.replace(/^#/, "")).split("/");
    if (parts[0] === "rejects" || parts[0] === "diff") return parts;
    if (parts[0] !== "items" && data.views.length) return ["items", "0", "0", "1"];
    return parts;
  }

  function navLink(href, label, count, current) {
    return el("a", {href: href, "class": current ? "current" : ""},
              [el("span", {text: label}), el("span", {"class": "count", text: String(count)})]);
  }

  function renderNav(r) {
    var nav = document.getElementById("nav"), here = "#" + r.slice(0, 3).join("/");
    nav.textContent = "";
    data.views.forEach(function (view, v) {
      nav.appendChild(el("h2", {text: view.title}));
      view.groups.forEach(function (g, n) {
        var href = "#items/" + v + "/" + n;
        nav.appendChild(navLink(href + "/1", g.split + " · " + g.source, g.items, here === href));
      });
      if (!view.groups.length) nav.appendChild(el("p", {text: "no rows"}));
    });
    nav.appendChild(el("h2", {text: "Rejects"}));
    nav.appendChild(navLink("#rejects", "by reason", data.rejects.total, here === "#rejects"));
    data.rejects.reasons.forEach(function (x, n) {
      var href = "#rejects/" + n;
      nav.appendChild(navLink(href + "/1", x.reason, x.count, here === href));
    });
    nav.appendChild(el("h2", {text: "Changes"}));
    if (data.diff) {
      nav.appendChild(navLink("#diff", data.diff.from + " → " + data.diff.to, "",
                              r[0] === "diff" && r.length === 1));
    } else {
      nav.appendChild(el("p", {text: "first version: nothing to compare"}));
    }
  }

  function pager(base, page, count, total) {
    var prev = page > 1 ? el("a", {id: "prev", href: base + "/" + (page - 1), text: "‹ previous"})
                        : el("span", {"class": "off", text: "‹ previous"});
    var next = page < count ? el("a", {id: "next", href: base + "/" + (page + 1), text: "next ›"})
                            : el("span", {"class": "off", text: "next ›"});
    var first = (page - 1) * data.page_size + 1, last = Math.min(page * data.page_size, total);
    return el("div", {"class": "pager"}, [prev,
      el("span", {id: "where", text: "page " + page + " of " + Math.max(count, 1) + " · " +
                  (total ? first + "–" + last + " of " + total : "none")}), next]);
  }

  function figure(image) {
    var shown = image.t && /^thumbs\//.test(image.t)
      ? el("img", {src: image.t, alt: image.n, title: image.n, loading: "lazy"})
      : el("div", {"class": "missing", title: "not in the release nor on this machine",
                   text: image.n});
    var notes = (image.l || []).map(function (note) { return el("div", {text: note}); });
    return el("figure", {"class": image.target ? "target" : ""},
              [shown, notes.length || image.target ? el("figcaption", {}, notes) : null]);
  }

  function card(c) {
    var tag = [c.split, c.source].filter(Boolean).join(" · ");
    var node = el("article", {"class": "card", "data-key": c.key},
                  [el("h3", {text: c.key}, [tag ? el("span", {"class": "tag", text: tag}) : null])]);
    if (c.images && c.images.length) node.appendChild(el("div", {"class": "images"}, c.images.map(figure)));
    if (c.before && c.before.length) {   // a changed row: its images in the previous version
      node.appendChild(el("p", {"class": "text"}, [el("b", {text: "before"})]));
      node.appendChild(el("div", {"class": "images before"}, c.before.map(figure)));
    }
    (c.text || []).forEach(function (t) {
      node.appendChild(el("p", {"class": "text"}, [el("b", {text: t[0]}), el("span", {text: t[1]})]));
    });
    if (c.choices && c.choices.length) {
      node.appendChild(el("ol", {"class": "choices", start: "0"}, c.choices.map(function (x) {
        return el("li", {"class": x.target ? "target" : ""},
                  [el("span", {text: x.x}), x.n ? el("span", {"class": "note", text: x.n}) : null]);
      })));
    }
    if (c.figures && c.figures.length) {
      node.appendChild(el("dl", {"class": "figures"}, c.figures.map(function (f) {
        return el("div", {}, [el("dt", {text: f[0]}), el("dd", {text: f[1]})]);
      })));
    }
    return node;
  }

  function cardsPage(main, title, base, path, page, count, total) {
    main.appendChild(el("h2", {text: title}));
    main.appendChild(pager(base, page, count, total));
    if (!total) { main.appendChild(el("p", {text: "Nothing here."})); return true; }
    var id = path + "/" + page;
    if (failed[id]) { main.appendChild(el("p", {"class": "error", text: "missing: data/" + id + ".js"})); return true; }
    if (!pages[id]) { load(id); main.appendChild(el("p", {text: "Loading…"})); return false; }
    main.appendChild(el("div", {"class": "cards"}, pages[id].map(card)));
    return true;
  }

  function summaryTable(head, rows) {
    return el("table", {"class": "summary"}, [el("tr", {}, head.map(function (h) { return el("th", {text: h}); }))]
      .concat(rows.map(function (row) {
        return el("tr", {}, row.map(function (v) {
          return typeof v === "object" ? el("td", {}, [v]) : el("td", {"class": typeof v === "number" ? "n" : "", text: String(v)});
        }));
      })));
  }

  function renderRejects(main, r) {
    var rejects = data.rejects;
    if (r.length < 3) {
      main.appendChild(el("h2", {text: rejects.total + " rejects, by reason"}));
      main.appendChild(summaryTable(["reason", "rejects", "stage/level"], rejects.reasons.map(function (x, n) {
        return [el("a", {href: "#rejects/" + n + "/1", text: x.reason}), x.count,
                Object.keys(x.stages).map(function (s) { return s + " " + x.stages[s]; }).join(", ")];
      })));
      return true;
    }
    var x = rejects.reasons[+r[1]];
    var title = x.reason + ": " + x.count + " rejects" +
                (x.shown < x.count ? " (the first " + x.shown + " shown)" : "");
    return cardsPage(main, title, "#rejects/" + r[1], x.path, +r[2] || 1, x.pages, x.shown);
  }

  function renderDiff(main, r) {
    var diff = data.diff;
    if (!diff) { main.appendChild(el("p", {text: "The first version in this folder: nothing to compare."})); return true; }
    var box = el("div", {"class": "config"}, [el("b", {text: "Config change " + diff.from + " → " + diff.to + ": "})]);
    if (!diff.config.length) box.appendChild(el("span", {text: "none (same config)."}));
    diff.config.forEach(function (c) {
      box.appendChild(el("div", {}, [el("code", {text: c.key}), el("span", {text: " " + JSON.stringify(c.from) + " → " + JSON.stringify(c.to)})]));
    });
    if (r.length < 4) {
      main.appendChild(el("h2", {text: "Changes since " + diff.from}));
      main.appendChild(box);
      diff.tables.forEach(function (t, n) {
        main.appendChild(el("h2", {text: t.title}));
        main.appendChild(el("p", {}, t.kinds.map(function (k) {
          return el("span", {}, [k.count ? el("a", {href: "#diff/" + n + "/" + k.kind + "/1", text: k.count + " " + k.kind})
                                         : el("span", {text: "0 " + k.kind}), el("span", {text: "  "})]);
        })));
        main.appendChild(el("p", {text: t.summary}));
        if (t.compared) main.appendChild(summaryTable(["split", "before", "after", "unchanged", "changed", "moved in", "moved out", "added", "removed"],
          Object.keys(t.per_split).map(function (s) {
            var c = t.per_split[s];
            return [s, c.before, c.after, c.unchanged, c.changed, c.moved_in, c.moved_out, c.added, c.removed];
          })));
      });
      return true;
    }
    var table = diff.tables[+r[1]], kind = table.kinds.filter(function (k) { return k.kind === r[2]; })[0];
    main.appendChild(box);
    return cardsPage(main, table.title + ": " + kind.count + " " + kind.kind, "#diff/" + r[1] + "/" + r[2],
                     kind.path, +r[3] || 1, kind.pages, kind.count);
  }

  function render() {
    if (!data) return;
    var r = route(), main = document.getElementById("main"), done;
    document.getElementById("title").textContent = data.benchmark + " " + data.version;
    document.getElementById("subtitle").textContent = "release explorer · opened from disk, nothing is fetched";
    renderNav(r);
    main.textContent = "";
    if (r[0] === "rejects") done = renderRejects(main, r);
    else if (r[0] === "diff") done = renderDiff(main, r);
    else {
      var view = data.views[+r[1]], group = view && view.groups[+r[2]];
      if (!group) { main.appendChild(el("p", {text: "Nothing here."})); done = true; }
      else done = cardsPage(main, view.title + ": " + group.split + " · " + group.source,
                            "#items/" + r[1] + "/" + r[2], group.path, +r[3] || 1, group.pages, group.items);
    }
    document.body.setAttribute("data-route", r.join("/"));
    document.body.setAttribute("data-ready", done ? "1" : "0");
  }

  window.addEventListener("hashchange", render);
  document.addEventListener("DOMContentLoaded", render);
  return {
    index: function (d) { data = d; },
    page: function (id, cards) { pages[id] = cards; render(); }
  };
})();
