/* The release explorer (pipelines/release/explorer/write.py writes its data).
 *
 * Opens from disk: browsers refuse to fetch file:// URLs but load scripts from them, so
 * data/index.js says what there is and every other piece of data is a script
 * data/<id>.js calling EXPLORER.data(id, value), added to the page when first needed:
 *   <view>/cards/<c>         PAGE_SIZE cards each; row i of a view is in chunk i / PAGE_SIZE
 *   <view>/rows/<c>          the same rows whole (the row view): every cell, file, compat/
 *   <view>/index/<col>/<c>   one search-index column, chunk_rows rows each
 *   <view>/stats             per-column statistics
 *   diff/<t>, diff/<t>/before/<c>   a table's changed keys, and rows as they were
 * A search, a filter or a sort loads the index columns it asks about, never all cards.
 *
 * The state is the URL's hash, so every view, search and row has a link and the back
 * button works:
 *   #view=<table>[&q=words][&f.<column>=value][&min.<column>=x][&max.<column>=y]
 *                [&sort=[-]<column>][&page=n][&tab=stats][&diff=added|removed|moved|changed]
 *                [&sub=1]   (q's words match inside words too; else whole words only)
 *   #view=<table>&row=<key>   one row, whole   #reasons   the rejects by reason
 *   #changes                  the changes since the previous version
 * Text goes into the page as text (never as HTML); images only from thumbs/; a URL of an
 * image is a link the person may follow, never loaded by the page.
 */
"use strict";
var EXPLORER = (function () {
  var index = null, loaded = {}, promises = {}, resolvers = {}, columnCache = {}, haystacks = {};
  var lastResult = {key: null, value: null}, renders = 0, firstCards = false;
  var toolbarKey = null, typing = null;
  var fmt = new Intl.NumberFormat("en-US");

  // --- small helpers ----------------------------------------------------------------

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function n(x) { return fmt.format(x); }
  function num(x) {   // a figure of the statistics: integers in full, others to 4 digits
    return typeof x !== "number" ? String(x) : Number.isInteger(x) ? n(x) : String(+x.toPrecision(4));
  }

  function load(id) {
    if (!promises[id]) {
      promises[id] = new Promise(function (resolve, reject) {
        resolvers[id] = resolve;
        var script = el("script", {src: "data/" + id + ".js"});
        script.onerror = function () { reject(new Error("missing: data/" + id + ".js")); };
        document.head.appendChild(script);
      });
    }
    return promises[id];
  }

  function views() { return index.views.concat([index.rejects]); }
  function viewOf(table) { return views().filter(function (v) { return v.table === table; })[0] || null; }
  function columnOf(view, name) {
    return view.index.columns.filter(function (c) { return c.name === name; })[0] || null;
  }
  function diffOf(table) {
    return index.diff ? index.diff.tables.filter(function (t) { return t.table === table; })[0] || null : null;
  }

  // A value with its ClassLabel name, as the dataset card declares it: "1 (True)".
  function labelled(view, name, value) {
    var col = (view.columns || []).filter(function (c) { return c.name === name; })[0];
    var names = col && col.labels, i = /^-?\d+$/.test(String(value)) ? parseInt(value, 10) : -1;
    return names && i >= 0 && i < names.length ? value + " (" + names[i] + ")" : value;
  }

  // A whole index column, from its chunks (a chunk not written holds no value).
  function column(view, col) {
    var id = view.path + "/index/" + col.n;
    if (!columnCache[id]) {
      var meta = view.index, chunks = Math.ceil(meta.rows / meta.chunk_rows), parts = [];
      for (var c = 0; c < chunks; c++) {
        parts.push(col.chunks.indexOf(c) >= 0 ? load(id + "/" + c) : Promise.resolve(null));
      }
      columnCache[id] = Promise.all(parts).then(function (values) {
        var out = new Array(meta.rows);
        values.forEach(function (v, c) {
          var start = c * meta.chunk_rows, size = Math.min(meta.chunk_rows, meta.rows - start);
          for (var i = 0; i < size; i++) {
            out[start + i] = v === null ? null : Array.isArray(v) ? v[i]
              : v.c[i] === null ? null : v.v[v.c[i]];
          }
        });
        return out;
      });
    }
    return columnCache[id];
  }

  // --- the state in the hash --------------------------------------------------------

  function parseHash() {
    var h = location.hash.replace(/^#/, ""), s = {area: "view", f: {}, min: {}, max: {}};
    if (h === "reasons" || h === "changes") { s.area = h; return s; }
    var p = new URLSearchParams(h);
    s.view = p.get("view") || (index.views.length ? index.views[0].table : index.rejects.table);
    s.q = p.get("q") || "";
    s.sub = p.get("sub") === "1";
    s.sort = p.get("sort") || "";
    s.page = Math.max(1, parseInt(p.get("page"), 10) || 1);
    s.row = p.get("row");
    s.mark = p.get("mark");
    s.tab = p.get("tab") || "rows";
    s.diff = p.get("diff") || "";
    if (s.diff && (!diffOf(s.view) || ["added", "removed", "moved", "changed"].indexOf(s.diff) < 0)) s.diff = "";
    p.forEach(function (value, key) {
      var dot = key.indexOf(".");
      if (dot > 0 && value !== "") {
        var part = key.slice(0, dot), name = key.slice(dot + 1);
        if (part === "f") s.f[name] = value;
        else if (part === "min" || part === "max") s[part][name] = value;
      }
    });
    return s;
  }

  function hashOf(s) {
    if (s.area !== "view") return "#" + s.area;
    var p = new URLSearchParams();
    p.set("view", s.view);
    if (s.tab && s.tab !== "rows") p.set("tab", s.tab);
    if (s.diff) p.set("diff", s.diff);
    if (s.q) p.set("q", s.q);
    if (s.q && s.sub) p.set("sub", "1");
    ["f", "min", "max"].forEach(function (part) {
      Object.keys(s[part] || {}).sort().forEach(function (k) {
        if (s[part][k] !== "") p.set(part + "." + k, s[part][k]);
      });
    });
    if (s.sort) p.set("sort", s.sort);
    if (s.row) p.set("row", s.row);
    if (s.page > 1) p.set("page", s.page);
    if (s.mark) p.set("mark", s.mark);
    return "#" + p.toString();
  }

  function link(change) {   // the hash of the current state with `change` applied
    var s = parseHash(), out = {area: "view", view: s.view, q: s.q, sub: s.sub, f: s.f, min: s.min, max: s.max,
                                sort: s.sort, tab: s.tab, diff: s.diff, page: 1};
    Object.keys(change).forEach(function (k) { out[k] = change[k]; });
    return hashOf(out);
  }

  function go(hash, replace) {
    if (hash === location.hash) return;
    if (replace) { history.replaceState(null, "", hash); render(); }
    else location.hash = hash;
  }

  // --- which rows -------------------------------------------------------------------

  function groupOnly(view, s) {   // only filters on a group's columns: the rows are ranges
    var names = Object.keys(s.f);
    return !s.q && !s.sort && !s.row && !s.diff && !Object.keys(s.min).length &&
      !Object.keys(s.max).length && view.groups.length &&
      names.every(function (k) { return view.group_by.indexOf(k) >= 0; });
  }

  // The view's rows (numbers) that the state selects, in the order it asks for.
  function results(view, s) {
    var key = JSON.stringify([view.table, s.q, s.sub, s.f, s.min, s.max, s.sort, s.row, s.diff]);
    if (lastResult.key === key) return Promise.resolve(lastResult.value);
    var done = function (value) { lastResult = {key: key, value: value}; return value; };
    if (groupOnly(view, s)) {
      var rows = [];
      view.groups.forEach(function (g) {
        if (Object.keys(s.f).every(function (k) { return String(g[k]) === s.f[k]; })) {
          for (var i = 0; i < g.count; i++) rows.push(g.start + i);
        }
      });
      return Promise.resolve(done(rows));
    }
    var need = {}, missing = [];
    function want(name) {
      var col = columnOf(view, name);
      if (col) need[name] = col; else missing.push(name);
    }
    Object.keys(s.f).forEach(want);
    Object.keys(s.min).concat(Object.keys(s.max)).forEach(want);
    if (s.sort) want(s.sort.replace(/^-/, ""));
    if (s.row || s.diff) want(view.key);
    var terms = searchTerms(s);
    var searched = terms.length ? view.index.columns.filter(function (c) { return c.kind === "text"; }) : [];
    searched.forEach(function (c) { need[c.name] = c; });
    var names = Object.keys(need);
    var diffData = s.diff && diffOf(view.table) ? load(diffOf(view.table).path) : Promise.resolve(null);
    return Promise.all([diffData].concat(names.map(function (k) { return column(view, need[k]); })))
      .then(function (got) {
        var diff = got[0], cols = {};
        names.forEach(function (k, i) { cols[k] = got[i + 1]; });
        if (missing.length) return done({rows: [], note: "no such column: " + missing.join(", ")});
        var tests = [];
        Object.keys(s.f).forEach(function (k) {
          var c = cols[k], v = s.f[k];
          tests.push(function (i) { return c[i] !== null && String(c[i]) === v; });
        });
        Object.keys(s.min).forEach(function (k) {
          var c = cols[k], v = parseFloat(s.min[k]);
          if (!isNaN(v)) tests.push(function (i) { return c[i] !== null && c[i] >= v; });
        });
        Object.keys(s.max).forEach(function (k) {
          var c = cols[k], v = parseFloat(s.max[k]);
          if (!isNaN(v)) tests.push(function (i) { return c[i] !== null && c[i] <= v; });
        });
        if (s.row) {
          var keys = cols[view.key];
          tests.push(function (i) { return keys[i] === s.row; });
        }
        if (s.diff && diff) {
          var wanted = {};
          (s.diff === "moved" ? diff.moved.map(function (m) { return m[0]; }) : diff[s.diff] || [])
            .forEach(function (k) { wanted[k] = true; });
          var dkeys = cols[view.key];
          tests.push(function (i) { return wanted[dkeys[i]] === true; });
        }
        if (terms.length) {
          var hay = haystack(view, searched, cols);
          tests.push(function (i) {
            for (var t = 0; t < terms.length; t++) if (!terms[t].test(hay[i])) return false;
            return true;
          });
        }
        var rows = [];
        for (var i = 0; i < view.index.rows; i++) {
          var ok = true;
          for (var t = 0; t < tests.length && ok; t++) ok = tests[t](i);
          if (ok) rows.push(i);
        }
        if (s.sort) {
          var by = cols[s.sort.replace(/^-/, "")], sign = s.sort[0] === "-" ? -1 : 1;
          rows.sort(function (a, b) {
            var x = by[a], y = by[b];
            if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
            return x < y ? -sign : x > y ? sign : a - b;
          });
        }
        return done(rows);
      });
  }

  // What a search asks for: each word, or each "quoted phrase", as a regular expression
  // (case folded); a whole word unless s.sub ("dogs" finds "two dogs", not "dogsled"), or
  // unless it looks like an id or a hash (six characters or more, a digit among them:
  // "93d332dd", "shot4_0#3"), which a person pastes from somewhere: found inside longer
  // ids too, so a pasted id or hash finds its row.
  function searchTerms(s) {
    var found = [], re = /"([^"]+)"|(\S+)/g, m;
    while ((m = re.exec(s.q.toLowerCase())) !== null) {
      var text = (m[1] || m[2]).trim();
      if (!text) continue;
      var pasted = !m[1] && text.length >= 6 && /\d/.test(text);
      var body = text.split(/\s+/).map(function (w) { return w.replace(/[.*+?^${}()|[\]\\\/]/g, "\\$&"); }).join("\\s+");
      found.push(new RegExp(s.sub || pasted ? body : "(?<![\\p{L}\\p{N}_])" + body + "(?![\\p{L}\\p{N}_])", "iu"));
    }
    return found;
  }

  function haystack(view, searched, cols) {   // per row: its searched texts, lower case
    if (!haystacks[view.path]) {
      var hay = new Array(view.index.rows);
      for (var i = 0; i < hay.length; i++) {
        var parts = [];
        for (var c = 0; c < searched.length; c++) {
          var v = cols[searched[c].name][i];
          if (v !== null && v !== undefined) parts.push(String(v));
        }
        hay[i] = parts.join("\n").toLowerCase();
      }
      haystacks[view.path] = hay;
    }
    return haystacks[view.path];
  }

  function cardsOf(view, rows) {   // the cards of these rows, in this order
    var chunks = {};
    rows.forEach(function (r) { chunks[Math.floor(r / index.page_size)] = true; });
    var ids = Object.keys(chunks).map(function (c) { return view.path + "/cards/" + c; });
    return Promise.all(ids.map(load)).then(function () {
      return rows.map(function (r) {
        return loaded[view.path + "/cards/" + Math.floor(r / index.page_size)][r % index.page_size];
      });
    });
  }

  function beforeCards(entry, keys) {   // a diff's rows as the previous version had them
    return load(entry.path).then(function (diff) {
      var at = {}, chunks = {};
      diff.before.forEach(function (k, i) { at[k] = i; });
      keys.forEach(function (k) { if (k in at) chunks[Math.floor(at[k] / index.page_size)] = true; });
      var ids = Object.keys(chunks).map(function (c) { return entry.path + "/before/" + c; });
      return Promise.all(ids.map(load)).then(function () {
        var out = {};
        keys.forEach(function (k) {
          if (k in at) out[k] = loaded[entry.path + "/before/" + Math.floor(at[k] / index.page_size)][at[k] % index.page_size];
        });
        return {cards: out, figures: diff.before_figures, diff: diff};
      });
    });
  }

  // --- drawing ----------------------------------------------------------------------

  function imageName(image) {   // explorer/write.py leaves out a name that is its URL's last part
    return image.n || image.u.split("?")[0].split("#")[0].replace(/\/+$/, "").split("/").pop() || image.u;
  }

  function figure(image) {
    var name = imageName(image);
    var shown = image.t && /^thumbs\//.test(image.t)
      ? el("img", {src: image.t, alt: name, title: name})
      : el("div", {"class": "missing", title: "not in the release nor on this machine", text: name});
    if (image.u) {
      shown = el("a", {href: image.u, target: "_blank", rel: "noopener noreferrer",
                       "class": "external", title: image.u + " (opens the source; this page loads nothing)"}, [shown]);
    }
    var notes = (image.l || []).map(function (note) { return el("div", {text: note}); });
    return el("figure", {"class": image.target ? "target" : null},
              [shown, notes.length || image.target ? el("figcaption", {}, notes) : null]);
  }

  // A text with the words searched for marked (as text nodes and <mark>s, never as HTML).
  function marked(text, terms) {
    if (!terms || !terms.length || !text) return [text];
    var out = [], at = 0;
    var global = terms.map(function (t) { return new RegExp(t.source, "giu"); });
    while (at < text.length) {
      var next = -1, size = 0;
      global.forEach(function (t) {
        t.lastIndex = at;
        var m = t.exec(text);
        if (m && m[0].length && (next < 0 || m.index < next || (m.index === next && m[0].length > size))) { next = m.index; size = m[0].length; }
      });
      if (next < 0) break;
      if (next > at) out.push(text.slice(at, next));
      out.push(el("mark", {text: text.slice(next, next + size)}));
      at = next + size;
    }
    if (at < text.length) out.push(text.slice(at));
    return out;
  }

  function card(view, c, extra) {
    extra = extra || {};
    var terms = extra.terms;
    var tag = view.table === "rejects" ? [c.r, c.s, c.o] : [c.s, c.o];
    var here = link({row: c.k, q: "", f: {}, min: {}, max: {}, sort: "", diff: "", tab: "rows"});
    var node = el("article", {"class": "card" + (extra.mark ? " marked" : ""), "data-key": c.k}, [
      el("h3", {}, [extra.removed ? el("span", {"class": "key", text: c.k})
                    : el("a", {href: here, "class": "key", title: "a link to this row"}, marked(c.k, terms)),
                    el("span", {"class": "tag", text: tag.filter(Boolean).join(" · ")})])]);
    if (c.i && c.i.length) node.appendChild(el("div", {"class": "images"}, c.i.map(figure)));
    if (extra.before && extra.before.length) {   // a changed row: its images in the previous version
      node.appendChild(el("p", {"class": "text"}, [el("b", {text: "before"})]));
      node.appendChild(el("div", {"class": "images before"}, extra.before.map(figure)));
    }
    (c.x || []).forEach(function (t, i) {
      if (t !== "") node.appendChild(el("p", {"class": "text"}, [el("b", {text: view.text[i]}), el("span", {}, marked(t, terms))]));
    });
    if (c.c && c.c.length) {
      node.appendChild(el("ol", {"class": "choices", start: "0"}, c.c.map(function (x) {
        return el("li", {"class": x.target ? "target" : null},
                  [el("span", {}, marked(x.x, terms)), x.n ? el("span", {"class": "note", text: x.n}) : null]);
      })));
    }
    var names = extra.figures || view.figures, changed = {};
    (extra.fields || []).forEach(function (f) { changed[f[0]] = true; });
    var pairs = (extra.moved ? [["moved", extra.moved]] : [])
      .concat((c.f || []).map(function (v, i) { return [names[i], labelled(view, names[i], v)]; }))
      .concat(c.m || []).filter(function (p) { return p[1] !== ""; });
    if (pairs.length) {
      node.appendChild(el("dl", {"class": "figures"}, pairs.map(function (f) {
        return el("div", {"class": changed[f[0]] ? "changed" : null},
                  [el("dt", {text: f[0]}), el("dd", {}, marked(f[1], terms))]);
      })));
    }
    if (extra.fields) {   // a changed row: which fields changed, each before and now
      node.appendChild(el("table", {"class": "fields changes"}, [
        el("tr", {}, ["changed field", "before", "now"].map(function (h) { return el("th", {text: h}); }))]
        .concat(extra.fields.map(function (f) {
          return el("tr", {"data-field": f[0]}, [el("td", {}, [el("b", {text: f[0]})]),
            el("td", {"class": "was"}, [cellText(view, f[0], f[1])]), el("td", {"class": "now"}, [cellText(view, f[0], f[2])])]);
        }))));
    }
    return node;
  }

  function pager(s, total) {
    var pages = Math.max(1, Math.ceil(total / index.page_size)), page = Math.min(s.page, pages);
    function to(p, label, id) {
      return p >= 1 && p <= pages && p !== page
        ? el("a", {href: link({page: p, row: s.row, mark: null}), id: id, text: label})
        : el("span", {"class": "off", text: label});
    }
    var jump = el("input", {type: "number", min: "1", max: String(pages), value: String(page),
                            "class": "jump", "aria-label": "page"});
    jump.addEventListener("change", function () {
      var p = Math.min(pages, Math.max(1, parseInt(jump.value, 10) || 1));
      go(link({page: p}));
    });
    var first = (page - 1) * index.page_size + 1, last = Math.min(page * index.page_size, total);
    return el("div", {"class": "pager"}, [to(1, "«", "first"), to(page - 1, "‹ previous", "prev"),
      el("span", {}, ["page ", jump, " of " + n(pages)]), to(page + 1, "next ›", "next"),
      to(pages, "»", "last"),
      el("span", {id: "where", text: total ? n(first) + "–" + n(last) + " of " + n(total) : "none"})]);
  }

  function searchNames(view) {   // the key and the texts first: what one searches for
    var texts = view.index.columns.filter(function (c) { return c.kind === "text"; }).map(function (c) { return c.name; });
    var first = [view.key].concat(view.text).filter(function (name) { return texts.indexOf(name) >= 0; });
    return first.join(", ") + (texts.length > first.length ? ", …" : "");
  }

  function toolbar(view, s) {
    var q = el("input", {type: "search", id: "q", value: s.q, placeholder: "Search " + searchNames(view),
                         title: "whole words, all of them, in the row's texts; \"a phrase\" in quotes (press / to come here)",
                         autocomplete: "off", spellcheck: "false"});
    var sub = el("input", {type: "checkbox", id: "sub", checked: s.sub ? "checked" : null});
    sub.addEventListener("change", function () { go(link({q: q.value.trim(), sub: sub.checked})); });
    var form = el("form", {id: "search"}, [q, el("button", {type: "submit", text: "Search"}),
      el("label", {"class": "sub", title: "also match inside words (\"dog\" finds \"dogsled\"); " +
                   "otherwise whole words; \"quotes\" make a phrase"}, [sub, " inside words"])]);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      clearTimeout(typing);
      typing = null;
      go(link({q: q.value.trim()}));
    });
    q.addEventListener("input", function () {   // search as one types, without a history entry each
      clearTimeout(typing);
      typing = setTimeout(function () { typing = null; go(link({q: q.value.trim()}), true); }, 250);
    });
    var controls = [form];
    view.index.columns.forEach(function (c) {
      if (!c.facet) return;
      var select = el("select", {"data-facet": c.name}, [el("option", {value: "", text: "any"})]
        .concat(c.facet.map(function (v) { return el("option", {value: v[0], text: labelled(view, c.name, v[0]) + " · " + n(v[1])}); })));
      select.value = s.f[c.name] || "";
      select.addEventListener("change", function () {
        var f = JSON.parse(JSON.stringify(parseHash().f));
        if (select.value) f[c.name] = select.value; else delete f[c.name];
        go(link({f: f}));
      });
      controls.push(el("label", {"class": "facet"}, [el("span", {text: c.name}), select]));
    });
    var numbers = view.index.columns.filter(function (c) { return c.kind === "number"; }), ranges = null;
    if (numbers.length) {
      var sort = el("select", {id: "sort"}, [el("option", {value: "", text: "release order"})]
        .concat([].concat.apply([], numbers.map(function (c) {
          return [el("option", {value: c.name, text: c.name + " ↑"}), el("option", {value: "-" + c.name, text: c.name + " ↓"})];
        }))));
      sort.value = s.sort;
      sort.addEventListener("change", function () { go(link({sort: sort.value})); });
      controls.push(el("label", {"class": "facet"}, [el("span", {text: "sort"}), sort]));
      var ranged = numbers.some(function (c) { return s.min[c.name] || s.max[c.name]; });
      ranges = el("details", {id: "ranges", open: ranged ? "open" : null}, [el("summary", {text: "ranges"})]);
      numbers.forEach(function (c) {
        var low = el("input", {type: "number", step: "any", "data-min": c.name, placeholder: String(c.min), value: s.min[c.name] || ""});
        var high = el("input", {type: "number", step: "any", "data-max": c.name, placeholder: String(c.max), value: s.max[c.name] || ""});
        [low, high].forEach(function (input) {
          input.addEventListener("change", function () {
            var now = parseHash(), min = now.min, max = now.max;
            if (low.value !== "") min[c.name] = low.value; else delete min[c.name];
            if (high.value !== "") max[c.name] = high.value; else delete max[c.name];
            go(link({min: min, max: max}));
          });
        });
        ranges.appendChild(el("label", {"class": "range"}, [el("span", {text: c.name}), low, "–", high]));
      });
    }
    controls.push(el("a", {href: hashOf({area: "view", view: view.table, f: {}, min: {}, max: {}, tab: "rows"}),
                           "class": "clear", text: "clear"}));
    if (ranges) controls.push(ranges);   // last: opened, it takes a line of its own
    return el("div", {"class": "toolbar", id: "toolbar"}, controls);
  }

  function syncToolbar(s) {   // the controls show the state (a back button, a link)
    var q = document.getElementById("q");
    if (q && !typing && q.value.trim() !== s.q) q.value = s.q;   // not while one types
    var sub = document.getElementById("sub");
    if (sub) sub.checked = s.sub;
    document.querySelectorAll("select[data-facet]").forEach(function (x) { x.value = s.f[x.getAttribute("data-facet")] || ""; });
    var sort = document.getElementById("sort");
    if (sort) sort.value = s.sort;
    document.querySelectorAll("input[data-min]").forEach(function (x) { x.value = s.min[x.getAttribute("data-min")] || ""; });
    document.querySelectorAll("input[data-max]").forEach(function (x) { x.value = s.max[x.getAttribute("data-max")] || ""; });
  }

  function tabs(view, s) {
    var entry = diffOf(view.table), items = [["rows", "Rows"], ["stats", "Statistics"]];
    var out = el("div", {"class": "tabs"}, items.map(function (t) {
      return el("a", {href: hashOf({area: "view", view: view.table, f: {}, min: {}, max: {}, tab: t[0]}),
                      "class": s.tab === t[0] && !s.diff ? "current" : null, text: t[1]});
    }));
    if (entry) {
      ["added", "removed", "moved", "changed"].forEach(function (kind) {
        var count = entry.counts[kind];
        out.appendChild(count
          ? el("a", {href: hashOf({area: "view", view: view.table, diff: kind, f: {}, min: {}, max: {}}),
                     "class": "change" + (s.diff === kind ? " current" : ""), text: n(count) + " " + kind})
          : el("span", {"class": "change off", text: "0 " + kind}));
      });
    }
    return out;
  }

  function drawRows(view, s, box) {
    if (s.diff === "removed") return drawRemoved(view, s, box);
    return results(view, s).then(function (found) {
      var rows = found.rows || found, total = rows.length;
      var pages = Math.max(1, Math.ceil(total / index.page_size)), page = Math.min(s.page, pages);
      var shown = rows.slice((page - 1) * index.page_size, page * index.page_size);
      var extras = s.diff ? load(diffOf(view.table).path) : Promise.resolve(null);
      var befores = s.diff === "changed"
        ? cardsOf(view, shown).then(function (cards) {
            return beforeCards(diffOf(view.table), cards.map(function (c) { return c.k; }));
          }) : Promise.resolve(null);
      var whole = s.row && rows.length && view.columns ? wholeRow(view, rows[0]) : Promise.resolve(null);
      return Promise.all([cardsOf(view, shown), extras, befores, whole]).then(function (got) {
        var cards = got[0], diff = got[1], before = got[2], row = got[3], moved = {};
        var terms = searchTerms(s);
        if (diff) diff.moved.forEach(function (m) { moved[m[0]] = m[1] + " → " + m[2]; });
        return function () {
          box.appendChild(el("p", {"class": "status", id: "status"}, [
            el("b", {text: n(total)}), " of " + n(view.rows) + (view.rows === 1 ? " row" : " rows") +
            (s.row ? " with this key" : s.diff ? " " + s.diff + " since " + index.diff.from
             : total === view.rows ? "" : " match")]
            .concat(found.note ? [el("span", {"class": "error", text: " · " + found.note})] : [])));
          if (s.row && rows.length) {
            var place = rows[0], p = Math.floor(place / index.page_size) + 1;
            box.appendChild(el("p", {"class": "status"}, [el("a", {
              href: hashOf({area: "view", view: view.table, f: {}, min: {}, max: {}, page: p, mark: s.row}),
              id: "place", text: "show it in its place: page " + n(p) + " of " + view.title}),
              " (row " + n(place + 1) + " of " + n(view.rows) + ")"]));
          }
          if (!s.row) box.appendChild(pager(s, total));
          if (!total) box.appendChild(el("p", {"class": "empty", text: s.row ? "No row has this key." : "Nothing matches."}));
          box.appendChild(el("div", {"class": "cards" + (s.row ? " one" : "")}, cards.map(function (c) {
            var was = before && before.cards[c.k];
            return card(view, c, {terms: terms, mark: s.mark === c.k || s.row === c.k, moved: s.diff === "moved" ? moved[c.k] : null,
                                  before: was ? was.i : null, fields: was ? was.d : null});
          })));
          if (row) box.appendChild(wholeRowView(view, row));
          if (total > index.page_size) box.appendChild(pager(s, total));
          return cards.length;
        };
      });
    });
  }

  function wholeRow(view, r) {   // row r of a view whole: {v: cells, p: [file, row], c: compat}
    return load(view.path + "/rows/" + Math.floor(r / index.page_size)).then(function (chunk) {
      return chunk[r % index.page_size];
    });
  }

  function cellText(view, name, value) {
    return value === null || value === undefined ? el("span", {"class": "none", text: "no value"})
      : el("span", {text: labelled(view, name, value)});
  }

  // The row view: every column of the row as its table holds it, its Parquet file and row
  // (links relative to this folder: the release's own files), its compat/ entries.
  function wholeRowView(view, row) {
    var file = view.files[row.p[0]];
    var parts = [el("h3", {text: "Every column"}),
      el("p", {"class": "where", id: "parquet"}, [el("b", {text: "Parquet "}),
        el("a", {href: "../" + file, text: file}), ", row " + n(row.p[1]) + " (counted from 0)"])];
    if (view.compat) {
      parts.push(el("p", {"class": "where", id: "compat"}, [el("b", {text: "compat/ "})].concat(
        row.c.length ? [].concat.apply([], row.c.map(function (entry, i) {
          return [i ? "; " : "", el("a", {href: "../" + entry[0], text: entry[0]}), " " + entry[1]];
        })) : [el("span", {"class": "none", text: "no entry in the original layout's files"})])));
    }
    parts.push(el("table", {"class": "summary fields", id: "row"}, view.columns.map(function (col, i) {
      return el("tr", {"data-column": col.name}, [el("th", {title: col.d || null, text: col.name}),
        el("td", {"class": "type", text: col.type}), el("td", {}, [cellText(view, col.name, row.v[i])])]);
    })));
    return el("section", {"class": "whole"}, parts);
  }

  function drawRemoved(view, s, box) {
    var entry = diffOf(view.table);
    return load(entry.path).then(function (diff) {
      var total = diff.removed.length, pages = Math.max(1, Math.ceil(total / index.page_size));
      var page = Math.min(s.page, pages);
      var keys = diff.removed.slice((page - 1) * index.page_size, page * index.page_size);
      return beforeCards(entry, keys).then(function (before) {
        return function () {
          box.appendChild(el("p", {"class": "status", id: "status"}, [el("b", {text: n(total)}),
            " rows removed since " + index.diff.from + ", as " + index.diff.from + " had them"]));
          box.appendChild(pager(s, total));
          var cards = keys.map(function (k) { return before.cards[k] || {k: k, s: "", o: ""}; });
          box.appendChild(el("div", {"class": "cards"}, cards.map(function (c) {
            return card(view, c, {figures: before.figures, removed: true});
          })));
          return cards.length;
        };
      });
    });
  }

  function drawStats(view, box) {
    return load(view.path + "/stats").then(function (stats) {
      return function () {
        box.appendChild(el("p", {"class": "status", id: "status"}, [el("b", {text: n(stats.rows)}),
          " rows · " + stats.columns.length + " columns, every row counted (parquet/" +
          (view.table === "rejects" ? "../rejects" : view.table) + ")"]));
        var head = el("tr", {}, ["column", "type", "missing", "values", "distribution"].map(function (h) { return el("th", {text: h}); }));
        box.appendChild(el("table", {"class": "summary stats"}, [head].concat(stats.columns.map(function (c) {
          return el("tr", {}, [el("td", {}, [el("b", {text: c.name})]), el("td", {"class": "type", text: c.type}),
            el("td", {"class": "n", text: c.missing ? n(c.missing) : "–"}),
            el("td", {}, summary(c)), el("td", {}, distribution(c))]);
        }))));
        return stats.columns.length;
      };
    });
  }

  function summary(c) {
    var parts = [];
    function line(text) { parts.push(el("div", {text: text})); }
    if (c.kind === "number") {
      if (c.count) line("min " + num(c.min) + " · mean " + num(c.mean) + " · max " + num(c.max));
    } else if (c.kind === "bool") {
      line("yes " + n(c["true"]) + " · no " + n(c["false"]));
    } else if (c.kind === "string") {
      line((typeof c.distinct === "number" ? n(c.distinct) : c.distinct) + " distinct" +
           (c.empty ? " · " + n(c.empty) + " empty" : ""));
      if (c.length) line("length " + num(c.length.min) + "–" + num(c.length.max) + " (mean " + num(c.length.mean) + ")");
    } else if (c.kind === "list") {
      if (c.length) line("length " + num(c.length.min) + "–" + num(c.length.max) + " (mean " + num(c.length.mean) + ")");
      var e = c.elements;
      if (e.kind === "number" && e.count) line("elements: min " + num(e.min) + " · mean " + num(e.mean) + " · max " + num(e.max));
      if (e.kind === "string") line("elements: " + (typeof e.distinct === "number" ? n(e.distinct) : e.distinct) + " distinct");
    }
    return parts;
  }

  function distribution(c) {
    var e = c.kind === "list" ? c.elements : c;
    if (e.histogram) {
      var top = Math.max.apply(null, e.histogram.counts.concat([1])), edges = e.histogram.edges;
      return [el("div", {"class": "hist"}, e.histogram.counts.map(function (count, i) {
          return el("span", {style: "height:" + Math.max(count ? 2 : 0, Math.round(40 * count / top)) + "px",
                             title: num(edges[i]) + " – " + num(edges[i + 1]) + ": " + n(count)});
        })), el("div", {"class": "axis"}, [el("span", {text: num(e.min)}), el("span", {text: num(e.max)})])];
    }
    if (e.top) {
      return [el("div", {"class": "top"}, e.top.map(function (t) {
        return el("div", {}, [el("span", {"class": "v", text: t[0] === "" ? "(empty)" : t[0]}),
                              el("span", {"class": "n", text: n(t[1])})]);
      }))];
    }
    return [];
  }

  function drawReasons(main) {
    var rejects = index.rejects;
    main.appendChild(el("h2", {text: n(rejects.total) + " rejects, by reason"}));
    main.appendChild(el("p", {"class": "status", text: "Every reject is a card under its reason; " +
      "the first " + index.page_size + " of each reason are pictured where the benchmark can."}));
    main.appendChild(summaryTable(["reason", "rejects", "stage/level"], rejects.groups.map(function (x) {
      return [el("a", {href: hashOf({area: "view", view: rejects.table, f: {reason: x.reason}, min: {}, max: {}}), text: x.reason}),
              x.count, Object.keys(x.stages).map(function (s) { return s + " " + n(x.stages[s]); }).join(", ")];
    })));
    return 1;
  }

  function drawChanges(main) {
    var diff = index.diff, before = diff && diff.previous;
    var named = diff ? (before ? before.benchmark + " " : "") + diff.from : "";
    main.appendChild(el("h2", {text: !diff ? "Changes" : diff.refused ? "Not compared with " + named : "Changes since " + named}));
    if (!diff) { main.appendChild(el("p", {text: "The first version in this folder: nothing to compare."})); return 1; }
    if (before) {
      var kinds = {sample: "the generated sample", inputs: "real inputs"};
      main.appendChild(el("p", {"class": "compared", id: "compared"}, [
        "Compared with " + before.benchmark + " " + before.version + ", the previous version in this folder (built from " +
        (kinds[before.built_from] || "inputs it does not record") + "; this one from " +
        (kinds[diff.built_from] || "inputs it does not record") + "): ",
        el("a", {href: before.explorer, text: "its explorer"}), "."]));
    }
    if (diff.refused) { main.appendChild(el("p", {"class": "error", id: "refused", text: diff.refused})); return 1; }
    var box = el("div", {"class": "config"}, [el("b", {text: "Config change " + diff.from + " → " + diff.to + ": "})]);
    if (!diff.config.length) box.appendChild(el("span", {text: "none (same config)."}));
    diff.config.forEach(function (c) {
      box.appendChild(el("div", {}, [el("code", {text: c.key}), el("span", {text: " " + JSON.stringify(c.from) + " → " + JSON.stringify(c.to)})]));
    });
    main.appendChild(box);
    diff.tables.forEach(function (t) {
      main.appendChild(el("h3", {text: t.title}));
      main.appendChild(el("p", {"class": "kinds"}, ["added", "removed", "moved", "changed"].map(function (kind) {
        var count = t.counts[kind];
        return count && t.view !== null
          ? el("a", {href: hashOf({area: "view", view: t.table, diff: kind, f: {}, min: {}, max: {}}), text: n(count) + " " + kind})
          : el("span", {"class": "off", text: n(count) + " " + kind});
      })));
      main.appendChild(el("p", {text: t.summary}));
      if (t.compared) main.appendChild(summaryTable(["split", "before", "after", "unchanged", "changed", "moved in", "moved out", "added", "removed"],
        Object.keys(t.per_split).map(function (s) {
          var c = t.per_split[s];
          return [s, c.before, c.after, c.unchanged, c.changed, c.moved_in, c.moved_out, c.added, c.removed];
        })));
    });
    return 1;
  }

  function summaryTable(head, rows) {
    return el("table", {"class": "summary"}, [el("tr", {}, head.map(function (h) { return el("th", {text: h}); }))]
      .concat(rows.map(function (row) {
        return el("tr", {}, row.map(function (v) {
          return typeof v === "object" ? el("td", {}, [v])
            : el("td", {"class": typeof v === "number" ? "n" : null, text: typeof v === "number" ? n(v) : String(v)});
        }));
      })));
  }

  function navLink(href, label, count, current, cls) {
    return el("a", {href: href, "class": (current ? "current " : "") + (cls || "")},
              [el("span", {text: label}), el("span", {"class": "count", text: count === "" ? "" : n(count)})]);
  }

  function drawNav(s) {
    var nav = document.getElementById("nav"), here = location.hash || hashOf({area: "view", view: s.view, f: {}, min: {}, max: {}});
    nav.textContent = "";
    nav.appendChild(el("h2", {text: "Tables"}));
    index.views.forEach(function (view) {
      var href = hashOf({area: "view", view: view.table, f: {}, min: {}, max: {}});
      nav.appendChild(navLink(href, view.title, view.rows, here === href, "table"));
      if (view.groups.length > 1) {
        view.groups.forEach(function (g) {
          var h = hashOf({area: "view", view: view.table, f: {split: g.split, source: g.source}, min: {}, max: {}});
          nav.appendChild(navLink(h, g.split + " · " + g.source, g.count, here === h, "group"));
        });
      }
    });
    var rejects = index.rejects;
    nav.appendChild(el("h2", {text: "Rejects"}));
    nav.appendChild(navLink("#reasons", "by reason", rejects.total, s.area === "reasons"));
    var all = hashOf({area: "view", view: rejects.table, f: {}, min: {}, max: {}});
    nav.appendChild(navLink(all, "all, searchable", rejects.total, here === all));
    rejects.groups.forEach(function (g) {
      var h = hashOf({area: "view", view: rejects.table, f: {reason: g.reason}, min: {}, max: {}});
      nav.appendChild(navLink(h, g.reason, g.count, here === h, "group"));
    });
    nav.appendChild(el("h2", {text: "Changes"}));
    nav.appendChild(index.diff ? navLink("#changes", index.diff.from + " → " + index.diff.to + (index.diff.refused ? " (not compared)" : ""), "", s.area === "changes")
                               : el("p", {text: "first version: nothing to compare"}));
  }

  function render() {
    if (!index) return;
    var token = ++renders, s = parseHash(), main = document.getElementById("main");
    document.getElementById("title").textContent = index.benchmark + " " + index.version;
    document.getElementById("subtitle").textContent = "release explorer · opened from disk, nothing is fetched";
    document.body.setAttribute("data-ready", "0");
    document.body.setAttribute("data-route", location.hash.replace(/^#/, ""));
    drawNav(s);
    function finish(count) {
      document.body.setAttribute("data-shown", String(count));
      document.body.setAttribute("data-ready", "1");
    }
    if (s.area !== "view") {
      toolbarKey = null;
      main.textContent = "";
      finish(s.area === "reasons" ? drawReasons(main) : drawChanges(main));
      return;
    }
    var view = viewOf(s.view);
    if (!view) { toolbarKey = null; main.textContent = ""; main.appendChild(el("p", {"class": "error", text: "No table " + s.view + "."})); finish(0); return; }
    var key = view.table + "|" + s.tab + "|" + s.diff;
    if (toolbarKey !== key) {   // rebuilt only for another view: typing keeps its focus
      toolbarKey = key;
      main.textContent = "";
      main.appendChild(el("div", {"class": "head"}, [el("h2", {text: view.title}),
        el("span", {"class": "rows", text: n(view.rows) + (view.table === "rejects" ? " rejects" : " rows")})]));
      main.appendChild(tabs(view, s));
      if (s.tab === "rows" && s.diff !== "removed") main.appendChild(toolbar(view, s));
      main.appendChild(el("div", {id: "results"}, [el("p", {"class": "status", text: "Loading…"})]));
    } else {
      syncToolbar(s);
    }
    var box = document.getElementById("results");
    var work = s.tab === "stats" ? drawStats(view, box) : drawRows(view, s, box);
    work.then(function (draw) {
      if (token !== renders) return;   // a newer state is being drawn
      box.textContent = "";
      var count = draw();
      if (!firstCards && count) { firstCards = true; if (window.performance && performance.mark) performance.mark("explorer-first-cards"); }
      finish(count);
    }, function (error) {
      if (token !== renders) return;
      box.textContent = "";
      box.appendChild(el("p", {"class": "error", text: String(error.message || error)}));
      finish(0);
    });
  }

  window.addEventListener("hashchange", render);
  document.addEventListener("keydown", function (e) {   // "/" to search, as on most sites
    var q = document.getElementById("q");
    if (e.key === "/" && q && document.activeElement !== q && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) {
      e.preventDefault();
      q.focus();
      q.select();
    }
  });
  document.addEventListener("DOMContentLoaded", render);
  return {
    index: function (value) { index = value; },
    data: function (id, value) {
      loaded[id] = value;
      if (resolvers[id]) { resolvers[id](value); delete resolvers[id]; }
    }
  };
})();
