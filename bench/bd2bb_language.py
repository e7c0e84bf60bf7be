"""Precision and recall of BD2BB's English filter (pipelines/bd2bb/tuple_filters.py, §3.1).

    python -m bench.bd2bb_language [--per-language 300] [--seed 1] [--real PATH] [--config YAML]
                                   [--set filters.min_english_probability=0 ...]

Generates intentions (the text typed after "If I") and actions (after "I will") in
English, Spanish, German and French from hand-written templates and word lists
(below, seeded), and takes the real English intentions and target actions of the public
BD2BB.csv (they passed the paper's manual filter, so they must pass ours). Each text
goes through the pipeline's own rule, `language_verdict`, with the thresholds of the
given config (default pipelines/bd2bb/configs/paper.yaml, overridable with --set like the
pipeline; `--set filters.min_english_probability=0` measures the word rule alone).
Prints a Markdown table per language and kind: texts, rejected as not English, rejected
as nonsense; then precision and recall with the positive class "rejected" (not English
or nonsense) over the generated texts, and precision again counting the public English
texts as negatives.

The templates follow BD2BB's shapes: intentions are states, wishes and likes
("am hungry", "want to pet the dog today", "like animals"), actions are verb phrases
with an object, optionally a place or a companion ("take a picture of the giraffe in the
park"). Each language has its own verbs, nouns (with gender), adjectives (agreeing),
places and time words, so no sentence is a translation of another.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
from typing import Callable, Dict, List, Sequence, Tuple

# --- the four languages ----------------------------------------------------------------------
# nouns: category -> [(noun, gender)]; verbs: category -> [verb] (a verb takes nouns of its
# category, so "eat the pizza" but not "eat the bike").

NOUNS = {
    "en": {"animal": [(w, "-") for w in "dog cat giraffe elephant horse zebra bear bird cow sheep".split()],
           "food": [(w, "-") for w in ("pizza", "cake", "apple", "banana", "sandwich", "hot dog", "donut",
                                       "ice cream", "carrot")],
           "thing": [(w, "-") for w in ("ball kite umbrella frisbee book phone laptop surfboard "
                                        "racket skateboard suitcase").split()],
           "vehicle": [(w, "-") for w in "bike car train boat motorcycle bus".split()]},
    "es": {"animal": [("perro", "m"), ("gato", "m"), ("jirafa", "f"), ("elefante", "m"), ("caballo", "m"),
                      ("cebra", "f"), ("oso", "m"), ("pájaro", "m"), ("vaca", "f"), ("oveja", "f")],
           "food": [("pizza", "f"), ("tarta", "f"), ("manzana", "f"), ("plátano", "m"), ("bocadillo", "m"),
                    ("perrito caliente", "m"), ("rosquilla", "f"), ("helado", "m"), ("zanahoria", "f")],
           "thing": [("pelota", "f"), ("cometa", "f"), ("paraguas", "m"), ("libro", "m"), ("teléfono", "m"),
                     ("ordenador", "m"), ("tabla de surf", "f"), ("raqueta", "f"), ("monopatín", "m"),
                     ("maleta", "f")],
           "vehicle": [("bicicleta", "f"), ("coche", "m"), ("tren", "m"), ("barco", "m"), ("moto", "f"),
                       ("autobús", "m")]},
    "de": {"animal": [("Hund", "m"), ("Katze", "f"), ("Giraffe", "f"), ("Pferd", "n"), ("Zebra", "n"),
                      ("Vogel", "m"), ("Kuh", "f"), ("Schaf", "n"), ("Kätzchen", "n")],
           "food": [("Pizza", "f"), ("Kuchen", "m"), ("Apfel", "m"), ("Banane", "f"), ("Brot", "n"),
                    ("Würstchen", "n"), ("Eis", "n"), ("Karotte", "f"), ("Brezel", "f")],
           "thing": [("Ball", "m"), ("Drachen", "m"), ("Regenschirm", "m"), ("Buch", "n"), ("Handy", "n"),
                     ("Surfbrett", "n"), ("Schläger", "m"), ("Koffer", "m"), ("Frisbee", "f")],
           "vehicle": [("Fahrrad", "n"), ("Auto", "n"), ("Boot", "n"), ("Motorrad", "n"), ("Roller", "m")]},
    "fr": {"animal": [("chien", "m"), ("chat", "m"), ("girafe", "f"), ("éléphant", "m"), ("cheval", "m"),
                      ("zèbre", "m"), ("ours", "m"), ("oiseau", "m"), ("vache", "f"), ("mouton", "m")],
           "food": [("pizza", "f"), ("gâteau", "m"), ("pomme", "f"), ("banane", "f"), ("sandwich", "m"),
                    ("glace", "f"), ("carotte", "f"), ("baguette", "f"), ("crêpe", "f")],
           "thing": [("ballon", "m"), ("cerf-volant", "m"), ("parapluie", "m"), ("livre", "m"),
                     ("téléphone", "m"), ("ordinateur", "m"), ("planche de surf", "f"), ("raquette", "f"),
                     ("valise", "f")],
           "vehicle": [("vélo", "m"), ("voiture", "f"), ("train", "m"), ("bateau", "m"), ("moto", "f"),
                       ("bus", "m")]},
}

VERBS = {
    "en": {"animal": ["pet", "feed", "hug", "draw", "take a picture of", "play with", "look at", "walk"],
           "food": ["eat", "buy", "cook", "share", "order", "taste", "cut", "grab"],
           "thing": ["throw", "take", "grab", "carry", "buy", "look for", "clean", "sell", "catch", "borrow"],
           "vehicle": ["ride", "drive", "wash", "fix", "push", "park", "paint", "rent"]},
    "es": {"animal": ["acariciar", "alimentar", "abrazar", "dibujar", "sacar una foto de", "jugar con",
                      "mirar", "pasear"],
           "food": ["comer", "comprar", "cocinar", "compartir", "pedir", "probar", "cortar", "coger"],
           "thing": ["tirar", "tomar", "coger", "llevar", "comprar", "buscar", "limpiar", "vender",
                     "atrapar", "pedir prestado"],
           "vehicle": ["montar en", "conducir", "lavar", "arreglar", "empujar", "aparcar", "pintar",
                       "alquilar"]},
    "de": {"animal": ["streicheln", "füttern", "umarmen", "zeichnen", "fotografieren", "anschauen",
                      "ausführen", "beobachten"],
           "food": ["essen", "kaufen", "kochen", "teilen", "bestellen", "probieren", "schneiden", "holen"],
           "thing": ["werfen", "nehmen", "holen", "tragen", "kaufen", "suchen", "putzen", "verkaufen",
                     "fangen", "ausleihen"],
           "vehicle": ["fahren", "waschen", "reparieren", "schieben", "parken", "streichen", "mieten"]},
    "fr": {"animal": ["caresser", "nourrir", "dessiner", "prendre en photo", "regarder", "promener",
                      "observer", "appeler"],
           "food": ["manger", "acheter", "cuisiner", "partager", "commander", "goûter", "couper", "prendre"],
           "thing": ["lancer", "prendre", "attraper", "porter", "acheter", "chercher", "nettoyer", "vendre",
                     "emprunter", "ranger"],
           "vehicle": ["conduire", "laver", "réparer", "pousser", "garer", "peindre", "louer"]},
}

# Adjectives: English one form; Spanish (m, f); French (m, f) after the noun; German a stem.
ADJECTIVES = {
    "en": ["big", "small", "red", "new", "old", "white", "black", "pretty", "little", "cute"],
    "es": [("grande", "grande"), ("pequeño", "pequeña"), ("rojo", "roja"), ("nuevo", "nueva"),
           ("viejo", "vieja"), ("blanco", "blanca"), ("negro", "negra"), ("bonito", "bonita")],
    "de": ["groß", "klein", "rot", "neu", "alt", "weiß", "schwarz", "schön"],
    "fr": [("rouge", "rouge"), ("blanc", "blanche"), ("noir", "noire"), ("bleu", "bleue"),
           ("vert", "verte"), ("énorme", "énorme"), ("mignon", "mignonne")],
}

PLACES = {
    "en": ["in the park", "on the beach", "in the kitchen", "on the street", "at home", "by the river",
           "in the field", "in the snow", "at the zoo", "in the city"],
    "es": ["en el parque", "en la playa", "en la cocina", "en la calle", "en casa", "junto al río",
           "en el campo", "en la nieve", "en el zoológico", "en la ciudad"],
    "de": ["im Park", "am Strand", "in der Küche", "auf der Straße", "zu Hause", "am Fluss",
           "auf dem Feld", "im Schnee", "im Zoo", "in der Stadt"],
    "fr": ["dans le parc", "à la plage", "dans la cuisine", "dans la rue", "à la maison",
           "au bord de la rivière", "dans le champ", "dans la neige", "au zoo", "en ville"],
}

COMPANIONS = {
    "en": ["with my friends", "with my brother", "with the kids", "with my girlfriend", "with my dad"],
    "es": ["con mis amigos", "con mi hermano", "con los niños", "con mi novia", "con mi padre"],
    "de": ["mit meinen Freunden", "mit meinem Bruder", "mit den Kindern", "mit meiner Freundin",
           "mit meinem Vater"],
    "fr": ["avec mes amis", "avec mon frère", "avec les enfants", "avec ma copine", "avec mon père"],
}

STATES = {
    "en": ["am hungry", "am thirsty", "am tired", "am bored", "am on vacation", "am happy", "feel sad",
           "have a free afternoon", "need a break", "am cold", "feel stressed", "am lonely"],
    "es": ["tengo hambre", "tengo sed", "estoy cansado", "estoy aburrido", "estoy de vacaciones",
           "estoy feliz", "me siento triste", "tengo la tarde libre", "necesito un descanso",
           "tengo frío", "estoy estresado", "me siento solo"],
    "de": ["habe Hunger", "habe Durst", "bin müde", "langweile mich", "bin im Urlaub", "bin glücklich",
           "fühle mich traurig", "habe heute frei", "brauche eine Pause", "friere", "bin gestresst",
           "fühle mich einsam"],
    "fr": ["ai faim", "ai soif", "suis fatigué", "m'ennuie", "suis en vacances", "suis heureux",
           "me sens triste", "ai un après-midi libre", "ai besoin d'une pause", "ai froid",
           "suis stressé", "me sens seul"],
}

WANTS = {
    "en": ["want to", "would like to", "need to", "have to", "am going to", "decide to"],
    "es": ["quiero", "me gustaría", "necesito", "tengo que", "voy a", "decido"],
    "de": ["will", "möchte", "muss", "soll", "darf", "werde"],
    "fr": ["veux", "voudrais", "dois", "vais", "aimerais", "décide de"],
}

LIKES = {
    "en": ["like animals", "love sports", "love italian food", "enjoy the sun", "like to travel",
           "love nature", "like to cook", "enjoy long walks"],
    "es": ["me gustan los animales", "me encanta el deporte", "me encanta la comida italiana",
           "disfruto del sol", "me gusta viajar", "amo la naturaleza", "me gusta cocinar",
           "disfruto de los paseos largos"],
    "de": ["mag Tiere", "liebe Sport", "liebe italienisches Essen", "genieße die Sonne", "reise gern",
           "liebe die Natur", "koche gern", "gehe gern lange spazieren"],
    "fr": ["aime les animaux", "adore le sport", "adore la cuisine italienne", "profite du soleil",
           "aime voyager", "aime la nature", "aime cuisiner", "aime les longues promenades"],
}

TIMES = {
    "en": ["today", "this afternoon", "right now", "this weekend", "tomorrow", "a bit", "again", "tonight"],
    "es": ["hoy", "esta tarde", "ahora mismo", "este fin de semana", "mañana", "un poco", "otra vez",
           "esta noche"],
    "de": ["heute", "heute Nachmittag", "jetzt", "am Wochenende", "morgen", "ein bisschen", "wieder",
           "heute Abend"],
    "fr": ["aujourd'hui", "cet après-midi", "maintenant", "ce week-end", "demain", "un peu", "encore",
           "ce soir"],
}

AND = {"en": "and", "es": "y", "de": "und", "fr": "et"}
LANGUAGES = ("en", "es", "de", "fr")


def _noun_phrase(lang: str, noun: str, gender: str, det: str, adjective) -> str:
    """det: "def", "indef" or "poss" (my); adjective: None or an entry of ADJECTIVES[lang]."""
    if lang == "en":
        words = {"def": "the", "poss": "my"}.get(det) or ("an" if (adjective or noun)[0] in "aeiou" else "a")
        return " ".join(w for w in (words, adjective, noun) if w)
    if lang == "es":
        article = {"def": {"m": "el", "f": "la"}, "indef": {"m": "un", "f": "una"},
                   "poss": {"m": "mi", "f": "mi"}}[det][gender]
        adj = "" if adjective is None else adjective[0 if gender == "m" else 1]
        return " ".join(w for w in (article, noun, adj) if w)
    if lang == "fr":
        article = {"def": {"m": "le", "f": "la"}, "indef": {"m": "un", "f": "une"},
                   "poss": {"m": "mon", "f": "ma"}}[det][gender]
        if noun[0] in "aeiouéh" and det != "indef":
            article = "l'" if det == "def" else "mon"
        adj = "" if adjective is None else adjective[0 if gender == "m" else 1]
        head = f"{article}{noun}" if article.endswith("'") else f"{article} {noun}"
        return " ".join(w for w in (head, adj) if w)
    # German accusative: den großen Hund / einen großen Hund / meinen großen Hund,
    # die große Katze / eine große Katze, das große Pferd / ein großes Pferd.
    article = {"def": {"m": "den", "f": "die", "n": "das"}, "indef": {"m": "einen", "f": "eine", "n": "ein"},
               "poss": {"m": "meinen", "f": "meine", "n": "mein"}}[det][gender]
    if adjective is None:
        return f"{article} {noun}"
    ending = {"m": "en", "f": "e", "n": "e" if det == "def" else "es"}[gender]
    return f"{article} {adjective}{ending} {noun}"


def _verb_phrase(lang: str, verb: str, obj: str, extra: str) -> str:
    """German puts the infinitive last ("im Park den Hund streicheln")."""
    if lang == "de":
        return " ".join(w for w in (extra, obj, verb) if w)
    return " ".join(w for w in (verb, obj, extra) if w)


def action(lang: str, rng: random.Random) -> str:
    category = rng.choice(sorted(NOUNS[lang]))
    noun, gender = rng.choice(NOUNS[lang][category])
    verb = rng.choice(VERBS[lang][category])
    det = rng.choice(("def", "def", "indef", "poss"))
    adjective = rng.choice(ADJECTIVES[lang]) if rng.random() < 0.35 else None
    obj = _noun_phrase(lang, noun, gender, det, adjective)
    extra = rng.choice(["", "", rng.choice(PLACES[lang]), rng.choice(COMPANIONS[lang])])
    return _verb_phrase(lang, verb, obj, extra)


def intention(lang: str, rng: random.Random) -> str:
    shape = rng.randrange(4)
    time = rng.choice(TIMES[lang]) if rng.random() < 0.4 else ""

    def wish() -> str:
        # German puts a time word after the finite verb, before the infinitive phrase.
        if lang == "de" and time:
            return f"{rng.choice(WANTS[lang])} {time} {action(lang, rng)}"
        return " ".join(w for w in (rng.choice(WANTS[lang]), action(lang, rng), time) if w)

    if shape == 0:
        return " ".join(w for w in (rng.choice(STATES[lang]), time) if w)
    if shape == 1:
        return wish()
    if shape == 2:
        return " ".join(w for w in (rng.choice(LIKES[lang]), time) if w)
    return f"{rng.choice(STATES[lang])} {AND[lang]} {wish()}"


def generate(lang: str, kind: str, n: int, seed: int) -> List[str]:
    """n distinct texts of one language and kind ("intention" or "action"), seeded."""
    rng = random.Random(f"{seed}/{lang}/{kind}")
    make: Callable[[str, random.Random], str] = intention if kind == "intention" else action
    texts: Dict[str, None] = {}
    for _ in range(n * 50):
        if len(texts) == n:
            break
        texts.setdefault(make(lang, rng), None)
    return list(texts)


# --- measuring the filter --------------------------------------------------------------------

REAL = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "realdata", "bd2bb", "BD2BB.csv")
KINDS = ("intention", "action")


def real_english(path: str) -> Dict[str, List[str]]:
    """The distinct public intentions and target actions (they passed §3.1's manual filter)."""
    from pipelines.bd2bb import compat as bd2bb_compat
    rows = bd2bb_compat.read_file(path)
    return {"intention": sorted({r["sent1"] for r in rows}),
            "action": sorted({r[f"ending{r['label']}"] for r in rows})}


def judge(texts: Sequence[str], rule: Callable[[str], object]) -> collections.Counter:
    """Texts per verdict: "pass", "not_english", "nonsense"."""
    return collections.Counter((rule(t) or ("pass",))[0] for t in texts)


def measure(per_language: int, seed: int, real_path: str, config: str,
            overrides: Sequence[str] = ()) -> Tuple[List[tuple], dict]:
    from pipelines.bd2bb.config import BD2BBConfig
    from pipelines.bd2bb.tuple_filters import english_words, language_identifier, language_verdict
    from pipelines.config import load_config
    f = load_config(config, list(overrides), BD2BBConfig).filters
    vocabulary = english_words(f.wordlist)
    identifier = language_identifier(tuple(f.languages))

    def rule(text):
        return language_verdict(text, vocabulary, f.min_english_share, identifier, f.min_english_probability)

    rows = []
    for lang in LANGUAGES:
        for kind in KINDS:
            texts = generate(lang, kind, per_language, seed)
            rows.append((lang, kind, len(texts), judge(texts, rule)))
    if real_path and os.path.isfile(real_path):
        for kind, texts in real_english(real_path).items():
            rows.append(("en (public BD2BB)", kind, len(texts), judge(texts, rule)))
    # Positive class: "rejected" (not English or nonsense), over the generated texts.
    generated = [r for r in rows if r[0] in LANGUAGES]
    tp = sum(n - v["pass"] for lang, _, n, v in generated if lang != "en")
    fn = sum(v["pass"] for lang, _, n, v in generated if lang != "en")
    fp = sum(n - v["pass"] for lang, _, n, v in generated if lang == "en")
    fp_public = sum(n - v["pass"] for lang, _, n, v in rows if lang not in LANGUAGES)
    summary = {"precision": tp / (tp + fp) if tp + fp else float("nan"),
               "recall": tp / (tp + fn) if tp + fn else float("nan"),
               "precision_with_public": tp / (tp + fp + fp_public) if tp + fp + fp_public else float("nan"),
               "filters": {"min_english_share": f.min_english_share, "languages": f.languages,
                           "min_english_probability": f.min_english_probability}}
    return rows, summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-language", type=int, default=300, help="texts per language and kind")
    parser.add_argument("--seed", type=int, default=1, help="0 was used to choose the thresholds")
    parser.add_argument("--real", default=REAL, help="the public BD2BB.csv (skipped when absent)")
    parser.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "..", "pipelines",
                                                         "bd2bb", "configs", "paper.yaml"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = parser.parse_args(argv)
    rows, summary = measure(args.per_language, args.seed, args.real, args.config, args.set)
    print(f"filters: {summary['filters']}  seed {args.seed}\n")
    print("| language | kind | texts | rejected not_english | rejected nonsense | rejected share |")
    print("|---|---|---|---|---|---|")
    for lang, kind, n, v in rows:
        rejected = n - v["pass"]
        print(f"| {lang} | {kind} | {n} | {v['not_english']} | {v['nonsense']} | {rejected / n:.1%} |")
    print(f"\ngenerated texts, positive class = rejected: precision {summary['precision']:.4f}, "
          f"recall {summary['recall']:.4f}; precision with the public texts as negatives "
          f"{summary['precision_with_public']:.4f}")


if __name__ == "__main__":
    main()
