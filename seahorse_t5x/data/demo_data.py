"""The synthetic demo dataset: SEAHORSE-format ratings over templated news articles.

SYNTHETIC DATA, NOT SEAHORSE. Every article, summary and label here is generated from small
per-language lexicons and sentence templates, so that the demo and the tests run offline
in minutes. The files have exactly the real dataset's layout (`seahorse_data/{train,
validation,test}.tsv` with its header, gem_id forms, worker_lang values, systems and
Yes/No/Unsure labels, plus an articles file in the `{gem_id, article}` JSON Lines format
that `prepare` reads), but the numbers a model reaches on them say nothing about SEAHORSE.

Each summary's defects are drawn independently per question, with each system's share of
Yes from the paper's Table 3, and each defect is a clear, local signal, so that a tiny
mT5-shaped model can learn all six questions:

- Q1 No: a garbled summary (most words replaced by random letter strings);
- Q2 No: a degenerate loop: the summary's last sentence breaks off in one word said eight
  to ten times in a row, with no closing mark;
- Q3 No: the words of the summary's sentence in scrambled order, all in lower case, with
  two or three punctuation marks standing alone between them;
- Q4 No: every person and place in the summary is one the article does not mention
  (mostly invented names);
- Q5 No: a vague summary that names the place but not what happened there;
- Q6 No: the summary is padded with a side detail of the article and an empty remark
  (two to three times as long).

Then 5% of the ratings are hasty: half of those say Yes whatever the summary (a defect is
missed, none is invented), a few labels become Unsure, and a Q1 label of No blanks Q2..Q6,
as in the real files. Same seed, same bytes.

Beside the ratings, each summary's error analysis in MetricInstruct's row format
(`explanations/{split}.jsonl`, see `demo_explanations`): the generator keeps, word by word,
where each defect went, so every error's location is the defective words exactly as the
summary writes them. Tracking them draws nothing from the random stream, so the ratings
and articles do not depend on it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import string
from collections.abc import Callable

from seahorse_t5x import constants, fileio
from seahorse_t5x.data import demo_articles, demo_explanations
from seahorse_t5x.data.demo_explanations import Defect, SummaryDefects

# Rows per split, like a small slice of SEAHORSE's 59/9/21 train/validation/test shares.
SPLIT_SIZES: dict[str, int] = {"train": 3000, "validation": 400, "test": 600}
# Share of hasty ratings: half of them say Yes whatever the summary, so a hasty rater misses a
# defect but never invents one. (Labels redrawn from Yes/No instead rate clean summaries No:
# Q1's defects are rare, so in an earlier version of these data 18 of the test split's 56 Q1
# No labels were clean summaries, which capped even a metric that knows every defect at Q1
# ROC-AUC 0.84.)
HASTY_RATING_RATE = 0.05
UNSURE_RATE = 0.015  # share of labels (after Q1) rated Unsure
Q1_UNSURE_RATE = 0.005
INVENTED_ENTITY_SHARE = 0.85  # of Q4 defects, how many use a never-seen entity
STRAY_PUNCTUATION = (",", ".")  # Q3: marks standing alone between words
LOOP_LENGTH = (8, 10)  # Q2: how often the looped word is said, inclusive range
LOOP_STRIP = ".,"  # Q2: marks dropped from the looped word
SUMMARIES_PER_ARTICLE = (2, 6)  # inclusive range; SEAHORSE has several systems per article

# Share of Yes per system and question, from the paper's Table 3 (Q1..Q6).
SYSTEM_YES_RATES: dict[str, tuple[float, ...]] = {
    "reference": (0.97, 0.97, 0.91, 0.54, 0.68, 0.43),
    "t5_base_250": (0.97, 0.79, 0.91, 0.41, 0.42, 0.25),
    "t5_base": (0.98, 0.92, 0.93, 0.59, 0.59, 0.43),
    "t5_xxl": (0.99, 0.97, 0.95, 0.65, 0.67, 0.51),
    "mt5_small_250": (0.71, 0.43, 0.59, 0.27, 0.19, 0.10),
    "mt5_small": (0.86, 0.57, 0.73, 0.36, 0.35, 0.19),
    "mt5_xxl": (0.96, 0.94, 0.88, 0.55, 0.65, 0.43),
    "palm_1shot": (0.88, 0.85, 0.79, 0.71, 0.57, 0.47),
    "palm_finetuned": (0.98, 0.98, 0.90, 0.69, 0.71, 0.56),
}

# (language, dataset) pairs with their annotation counts from the paper's Table 1: the demo
# draws articles in the same proportions.
LANGUAGE_DATASET_WEIGHTS: dict[tuple[str, str], int] = {
    ("de", "mlsum"): 7506,
    ("de", "wikilingua"): 7085,
    ("en", "xsum"): 6651,
    ("en", "xlsum"): 7884,
    ("en", "wikilingua"): 7804,
    ("es", "xlsum"): 4890,
    ("es", "mlsum"): 4857,
    ("es", "wikilingua"): 5002,
    ("ru", "xlsum"): 7254,
    ("ru", "wikilingua"): 7288,
    ("tr", "xlsum"): 10627,
    ("tr", "wikilingua"): 4791,
    ("vi", "xlsum"): 7522,
    ("vi", "wikilingua"): 7484,
}
WORKER_LANG: dict[str, str] = {v: k for k, v in constants.WORKER_LANG_TO_LANGUAGE.items()}


_ENTITY_SLOTS = ("person", "city")  # the entity slots of the summary templates


@dataclasses.dataclass(frozen=True)
class DemoDataset:
    """The generated dataset in memory.

    Attributes:
      rows: split -> TSV rows, each a dict keyed by `constants.TSV_COLUMNS`.
      articles: gem_id -> article text, in generation order.
      defects: split -> per row (aligned with `rows`), the defects its summary was built
        with and where its words show them (`demo_explanations.SummaryDefects`).
    """

    rows: dict[str, list[dict[str, str]]]
    articles: dict[str, str]
    defects: dict[str, list[SummaryDefects]] = dataclasses.field(default_factory=dict)


def _invented_entity(rng: random.Random, article: demo_articles.Article, slot: str) -> str:
    """An entity of the slot's kind that the article does not mention (Q4 defect)."""
    lex = demo_articles.LEXICONS[article.language]
    invented, regular = (
        (lex.invented_names, lex.names)
        if slot.startswith("person")
        else (lex.invented_cities, lex.cities)
    )
    # Mostly names no article uses (learnable from the summary alone); the rest are real
    # names from other articles, which only a comparison with the article catches.
    choices = invented if rng.random() < INVENTED_ENTITY_SHARE else regular
    return rng.choice([c for c in choices if c not in article.entities])


@dataclasses.dataclass
class _Word:
    """One word of a summary being built, and where it came from (for the explanations)."""

    text: str
    sentence: int  # 0: the main sentence; 1: the padding's side detail; 2: its empty remark
    slot: str = ""  # an invented entity's word: the slot it fills ("person", "city")
    core: tuple[int, int] = (0, 0)  # that word's part of `text` (the rest: attached marks)
    looped: bool = False
    garbled: bool = False

    def recase(self, change: Callable[[str], str]) -> None:
        """Applies a change of case that maps every prefix to a prefix (lower, capitalize)."""
        a, b = self.core
        self.core = (len(change(self.text[:a])), len(change(self.text[:b])))
        self.text = change(self.text)


def _words(
    text: str, sentence: int, spans: dict[str, tuple[int, int]] | None = None
) -> list[_Word]:
    """The words of `text` (as `str.split` gives them), each marked with the entity slot
    whose characters (`spans`: slot -> start, end in `text`) it holds."""
    words = []
    for match in re.finditer(r"\S+", text):
        word = _Word(match.group(), sentence)
        for slot, (a, b) in (spans or {}).items():
            if a < match.end() and match.start() < b:
                word.slot = slot
                word.core = (
                    max(a, match.start()) - match.start(),
                    min(b, match.end()) - match.start(),
                )
        words.append(word)
    assert [w.text for w in words] == text.split(), text
    return words


def _rendered_words(sentence: demo_articles.Sentence, overrides: dict[str, str]) -> list[_Word]:
    """`sentence.render(**overrides)` as words, the overridden slots' words marked."""
    values = {**sentence.slots, **overrides}
    spans, position = {}, 0
    for literal, field, spec, _conversion in string.Formatter().parse(sentence.template):
        position += len(literal)
        if field is not None:
            value = format(values[field], spec or "")
            if field in overrides:
                spans[field] = (position, position + len(value))
            position += len(value)
    text = sentence.render(**overrides)
    assert position == len(text), sentence.template  # the capital letter kept every offset
    return _words(text, 0, spans)


def _garble(rng: random.Random, words: list[_Word], alphabet: str) -> None:
    """Q1 defect: most words become random letter strings; no punctuation survives."""
    for word in words:
        if rng.random() < 0.8:
            length = max(2, len(word.text) + rng.randint(-1, 2))
            word.text = "".join(rng.choice(alphabet) for _ in range(length))
            word.garbled = True
        else:
            word.text = word.text.strip(".,")


def _break_off_in_a_loop(rng: random.Random, words: list[_Word]) -> list[_Word]:
    """Q2 defect: from one of its words on, the sentence says that word over and over (eight
    to ten times in all) and stops there, without its closing mark, like a generation that
    loops until it reaches its length limit: `The council opened a park.` ->
    `The council council council council council council council council council council`.
    """
    start = rng.choice([i for i, word in enumerate(words) if word.text.strip(LOOP_STRIP)])
    first = words[start]
    lead = len(first.text) - len(first.text.lstrip(LOOP_STRIP))
    text = first.text.strip(LOOP_STRIP)
    a, b = first.core
    # The first of the looped words keeps its place in an entity; the repeats hold none.
    head = dataclasses.replace(
        first, text=text, core=(max(a - lead, 0), min(b - lead, len(text))), looped=True
    )
    repeat = dataclasses.replace(head, slot="", core=(0, 0))
    count = rng.randint(*LOOP_LENGTH)
    return words[:start] + [head] + [dataclasses.replace(repeat) for _ in range(count - 1)]


def _span(offsets: list[int], words: list[_Word], chosen: list[int]) -> tuple[int, int]:
    """From the start of the first chosen word to the end of the last (word indices)."""
    return offsets[chosen[0]], offsets[chosen[-1]] + len(words[chosen[-1]].text)


def _shown_defects(
    article: demo_articles.Article,
    base: demo_articles.Sentence,
    overrides: dict[str, str],
    defects: dict[int, bool],
    words: list[_Word],
    before_loop: str,
) -> SummaryDefects:
    """Where the summary's words show each defect it was built with (`demo_explanations`)."""
    lex = demo_articles.LEXICONS[article.language]
    offsets, position = [], 0
    for word in words:
        offsets.append(position)
        position += len(word.text) + 1
    # The main sentence in order, with the article's person and place (never invented ones).
    in_order = demo_articles.Sentence(base.template, article.main_slots).render()
    main_point = demo_articles.Sentence(lex.summary_mains[0], article.main_slots).render()
    drawn = tuple(q for q in constants.QUESTIONS if defects[q])
    shown: list[Defect] = []
    if defects[1]:
        # A garbled summary shows no other defect; without a garbled word, not even its own.
        garbled = [i for i, w in enumerate(words) if w.garbled]
        if garbled:
            shown.append(
                Defect(
                    1,
                    *_span(offsets, words, garbled),
                    correction=main_point if defects[5] else in_order,
                    count=len(garbled),
                    words=sum(1 for w in words if w.text),
                )
            )
        return SummaryDefects(drawn, tuple(shown))
    main = [i for i, w in enumerate(words) if w.sentence == 0]
    padding = [i for i, w in enumerate(words) if w.sentence > 0]
    if defects[2]:
        looped = [i for i, w in enumerate(words) if w.looped]
        shown.append(
            Defect(
                2,
                *_span(offsets, words, looped),
                correction=before_loop if defects[6] else in_order,
                in_padding=defects[6],
                count=len(looped),
            )
        )
    if defects[3] and not words[main[0]].looped:  # a loop from its first word hides the order
        shown.append(Defect(3, *_span(offsets, words, main), correction=in_order))
    if defects[4]:
        for slot, entity in overrides.items():
            held = [i for i, w in enumerate(words) if w.slot == slot]
            if not held:  # cut off by the loop
                continue
            start = offsets[held[0]] + words[held[0]].core[0]
            end = offsets[held[-1]] + words[held[-1]].core[1]
            kind = "person" if slot == "person" else "place"
            correction = article.main_slots[slot]
            shown.append(Defect(4, start, end, correction, entity=entity, kind=kind))
    if defects[5]:
        shown.append(Defect(5, *_span(offsets, words, main), correction=main_point))
    if defects[6]:
        shown.append(Defect(6, *_span(offsets, words, padding), in_padding=True))
    shown.sort(key=lambda d: (d.start, d.question))
    return SummaryDefects(drawn, tuple(shown))


def _make_summary(
    rng: random.Random, article: demo_articles.Article, defects: dict[int, bool]
) -> tuple[str, SummaryDefects]:
    """Renders one summary of `article` with the given defects (True = the question's No).

    Returns:
      The summary, and where its words show each defect (for `demo_explanations`).
    """
    lex = demo_articles.LEXICONS[article.language]
    if defects[5]:  # vague: names the place, not what happened
        base = demo_articles.Sentence(rng.choice(lex.summary_vagues), article.main_slots)
    else:
        base = demo_articles.Sentence(rng.choice(lex.summary_mains), article.main_slots)
    overrides = {}
    if defects[4]:  # every person and place in the summary is one the article lacks
        for slot in _ENTITY_SLOTS:
            if "{" + slot + "}" in base.template:
                overrides[slot] = _invented_entity(rng, article, slot)
    words = _rendered_words(base, overrides)
    if defects[3]:  # scrambled word order, all in lower case, stray punctuation marks
        original = [w.text for w in words]
        while [w.text for w in words] == original:
            rng.shuffle(words)
        for word in words:
            word.recase(str.lower)
        for _ in range(rng.randint(2, 3)):
            words.insert(rng.randrange(1, len(words) + 1), _Word(rng.choice(STRAY_PUNCTUATION), 0))
    if not defects[3]:
        words[0].recase(lambda text: text[:1].upper() + text[1:])
    sentences = [words]
    if defects[6]:  # padded with a side detail and an empty remark: two to three times as long
        side = rng.choice(article.sides).render()
        sentences += [_words(side, 1), _words(rng.choice(lex.summary_fillers), 2)]
    before_loop = " ".join(w.text for w in sentences[-1])
    if defects[2]:  # a degenerate loop: the last sentence breaks off in one word said over and over
        sentences[-1] = _break_off_in_a_loop(rng, sentences[-1])
    words = [word for sentence in sentences for word in sentence]
    if defects[1]:
        _garble(rng, words, lex.alphabet)
    text = " ".join(w.text for w in words)
    return text, _shown_defects(article, base, overrides, defects, words, before_loop)


def _draw_labels(rng: random.Random, system: str) -> tuple[dict[int, bool], list[str]]:
    """Draws latent defects per question and the (noisy) labels raters gave.

    Returns:
      defects: question -> True when the summary is built with that question's defect.
      labels: question1..question6 values as written in the TSV.
    """
    yes_rates = SYSTEM_YES_RATES[system]
    defects = {q: rng.random() >= yes_rates[q - 1] for q in constants.QUESTIONS}
    labels = []
    for q in constants.QUESTIONS:
        label = constants.LABEL_NO if defects[q] else constants.LABEL_YES
        if rng.random() < HASTY_RATING_RATE:
            # One draw of two, as a uniform redraw from (Yes, No) would take: the random
            # stream, and so every article and summary, does not depend on the noise's kind.
            label = rng.choice((constants.LABEL_YES, label))
        if rng.random() < (Q1_UNSURE_RATE if q == 1 else UNSURE_RATE):
            label = constants.LABEL_UNSURE
        labels.append(label)
    if labels[0] == constants.LABEL_NO:  # as in SEAHORSE: Q1 No leaves Q2..Q6 empty
        labels[1:] = [""] * 5
    return defects, labels


def generate(seed: int = 0, split_sizes: dict[str, int] | None = None) -> DemoDataset:
    """Generates the demo dataset in memory (deterministic for `seed`).

    Args:
      seed: random seed; the same seed gives the same dataset.
      split_sizes: rows per split (default `SPLIT_SIZES`).
    """
    sizes = dict(SPLIT_SIZES if split_sizes is None else split_sizes)
    rng = random.Random(seed)
    pairs = list(LANGUAGE_DATASET_WEIGHTS)
    weights = [LANGUAGE_DATASET_WEIGHTS[p] for p in pairs]
    # SEAHORSE train and validation summaries both come from the sources' validation
    # splits, so their articles share one id space; ids increase with random gaps.
    next_number: dict[tuple[str, str, str], int] = {}
    rows: dict[str, list[dict[str, str]]] = {}
    articles: dict[str, str] = {}
    shown: dict[str, list[SummaryDefects]] = {}
    for split in constants.SPLITS:
        source_split = "test" if split == "test" else "validation"
        split_rows: list[dict[str, str]] = []
        split_defects: list[SummaryDefects] = []
        while len(split_rows) < sizes.get(split, 0):
            language, dataset = rng.choices(pairs, weights)[0]
            key = (language, dataset, source_split)
            number = next_number.get(key, rng.randrange(0, 50)) + rng.randint(1, 30)
            next_number[key] = number
            gem_id = demo_articles.gem_id(language, dataset, source_split, number)
            article = demo_articles.make_article(rng, language, gem_id)
            articles[gem_id] = article.text
            wanted = min(rng.randint(*SUMMARIES_PER_ARTICLE), sizes[split] - len(split_rows))
            seen: set[str] = set()
            for system in rng.sample(constants.SYSTEMS, wanted):
                defects, labels = _draw_labels(rng, system)
                # Two systems may render the same summary; SEAHORSE has no duplicate
                # (gem_id, summary) pairs, so redraw the wording (rarely, give up).
                for _ in range(20):
                    summary, where = _make_summary(rng, article, defects)
                    if summary not in seen:
                        break
                else:
                    continue
                seen.add(summary)
                split_rows.append(
                    dict(
                        zip(
                            constants.TSV_COLUMNS,
                            (gem_id, WORKER_LANG[language], summary, system, *labels),
                            strict=True,
                        )
                    )
                )
                split_defects.append(where)
        rows[split] = split_rows
        shown[split] = split_defects
    return DemoDataset(rows=rows, articles=articles, defects=shown)


def write_demo_dataset(
    output_dir: str, seed: int = 0, split_sizes: dict[str, int] | None = None
) -> dict:
    """Writes the demo dataset in the real SEAHORSE layout.

    Writes `output_dir/seahorse_data/{train,validation,test}.tsv` (header row, tab
    separated, no quoting), `output_dir/articles.jsonl` (`{"gem_id", "article"}`) and
    `output_dir/explanations/{train,validation,test}.jsonl`: each summary's error analysis
    in MetricInstruct's row format, written from the defects it was built with
    (`demo_explanations`), one row per TSV row and in the same order.

    Args:
      output_dir: directory to write into (created if missing; checked first).
      seed: random seed; the same seed gives byte-identical files.
      split_sizes: rows per split (default `SPLIT_SIZES`; smaller for quick tests).

    Returns:
      {"seahorse_dir": ..., "articles": ..., "explanations": {split: path},
      "rows": {split: count}, "num_articles": n}.
    """
    fileio.check_output_path(output_dir, "directory", flag="--output_dir")
    data = generate(seed, split_sizes)
    seahorse_dir = os.path.join(output_dir, "seahorse_data")
    for split, split_rows in data.rows.items():
        with fileio.atomic_writer(os.path.join(seahorse_dir, f"{split}.tsv")) as f:
            f.write("\t".join(constants.TSV_COLUMNS) + "\n")
            for row in split_rows:
                f.write("\t".join(row[c] for c in constants.TSV_COLUMNS) + "\n")
    articles_path = os.path.join(output_dir, "articles.jsonl")
    with fileio.atomic_writer(articles_path) as f:
        for gem_id, text in data.articles.items():
            f.write(json.dumps({"gem_id": gem_id, "article": text}, ensure_ascii=False) + "\n")
    explanations = demo_explanations.write_explanations(
        output_dir, data.rows, data.articles, data.defects
    )
    return {
        "seahorse_dir": seahorse_dir,
        "articles": articles_path,
        "explanations": explanations,
        "rows": {split: len(r) for split, r in data.rows.items()},
        "num_articles": len(data.articles),
    }


def prepare_demo(
    output_dir: str,
    seed: int = 0,
    log: Callable[[str], None] | None = print,
    split_sizes: dict[str, int] | None = None,
) -> str:
    """Writes the demo dataset into `output_dir` and prepares it into `output_dir/prepared`.

    Args:
      output_dir: folder for `seahorse_data/`, `articles.jsonl`, `explanations/` and
        `prepared/`.
      seed: data seed.
      log: receives progress lines (None: silent).
      split_sizes: rows per split (default `SPLIT_SIZES`; smaller for quick tests).

    Returns:
      The prepared folder, holding `{train,validation,test}.jsonl` (for SEAHORSE_DATA_DIR).
    """
    from seahorse_t5x.data import prepare  # prepare does not depend on the demo

    written = write_demo_dataset(output_dir, seed=seed, split_sizes=split_sizes)
    if log:
        rows = ", ".join(f"{split} {n}" for split, n in written["rows"].items())
        log(
            f"wrote synthetic demo data ({rows} rows, {written['num_articles']} articles) "
            f"to {written['seahorse_dir']} and {written['articles']}"
        )
        folder = os.path.join(output_dir, demo_explanations.EXPLANATIONS_DIR)
        log(f"wrote their error analyses (MetricInstruct format, synthetic) to {folder}")
    prepared = os.path.join(output_dir, "prepared")
    prepare.prepare(written["seahorse_dir"], [written["articles"]], prepared, log=log)
    return prepared
