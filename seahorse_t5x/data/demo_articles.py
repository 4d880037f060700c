"""The demo's articles: each language's words and sentence templates (`lexicons.json`,
shipped beside this module, as `Lexicon`s), GEM ids in SEAHORSE's forms, and templated news
articles that remember their sentences and the entities they mention (`Article`), for the
demo's summaries to be built from (`demo_data`).

SYNTHETIC DATA, NOT SEAHORSE (see `demo_data`).
"""

from __future__ import annotations

import dataclasses
import json
import random
from importlib import resources

from seahorse_t5x import constants

CLOSING_SENTENCE_RATE = 0.25  # articles ending with a closing remark (kept short otherwise)
# Each language's words and sentence templates (`Lexicon` fields), shipped beside this module.
LEXICONS_FILE = "lexicons.json"


@dataclasses.dataclass(frozen=True)
class Lexicon:
    """One language's words and sentence templates.

    Slots: {person} {role} {org} {event} {city} {day} {num} {num2} in the main sentences;
    {person2} {city2} {job} {thing} {weather} {month} in the side sentences. Cities are
    stored in the form every template uses (e.g. Russian prepositional, Turkish locative).
    """

    names: tuple[str, ...]
    invented_names: tuple[str, ...]  # never appear in an article: Q4 hallucinations
    cities: tuple[str, ...]
    invented_cities: tuple[str, ...]
    orgs: tuple[str, ...]
    roles: tuple[str, ...]
    events: tuple[str, ...]
    days: tuple[str, ...]
    jobs: tuple[str, ...]
    things: tuple[str, ...]
    weathers: tuple[str, ...]
    months: tuple[str, ...]
    article_main: str
    article_number: str
    article_sides: tuple[str, ...]
    article_closings: tuple[str, ...]
    summary_mains: tuple[str, ...]  # the last one mentions {num}
    summary_vagues: tuple[str, ...]  # Q5 No: names the place, not what happened ({city})
    summary_fillers: tuple[str, ...]  # Q6 No: empty padding; never in an article
    alphabet: str  # letters of garbled (Q1) words


def _load_lexicons() -> dict[str, Lexicon]:
    """The per-language lexicons from the package's `lexicons.json` (language -> fields).

    Lists there become tuples here, so a lexicon is hashable and read-only like the rest of
    the generator's constants.
    """
    text = resources.files("seahorse_t5x.data").joinpath(LEXICONS_FILE).read_text("utf-8")
    return {
        language: Lexicon(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
        for language, fields in json.loads(text).items()
    }


LEXICONS: dict[str, Lexicon] = _load_lexicons()


@dataclasses.dataclass(frozen=True)
class Sentence:
    template: str
    slots: dict[str, str]

    def render(self, **overrides: str) -> str:
        text = self.template.format(**{**self.slots, **overrides})
        return text[0].upper() + text[1:]


@dataclasses.dataclass(frozen=True)
class Article:
    gem_id: str
    language: str
    main_slots: dict[str, str]
    sentences: tuple[Sentence, ...]  # main, number, side details..., closing
    sides: tuple[Sentence, ...]
    entities: frozenset[str]  # every name, city and number the article mentions

    @property
    def text(self) -> str:
        return " ".join(s.render() for s in self.sentences)


def gem_id(language: str, dataset: str, source_split: str, number: int) -> str:
    """The gem_id form SEAHORSE uses for each source dataset (see docs/data.md)."""
    name = constants.LANGUAGE_NAMES[language]
    if dataset == "xlsum":
        return f"xlsum_{name}-{source_split}-{number}"
    if dataset == "mlsum":
        return f"mlsum_{language}-{source_split}-{number}"
    if dataset == "xsum":
        return f"xsum-{source_split}-{number}"
    # GEM v1 WikiLingua ids spell the validation split `val`.
    short_split = "val" if source_split == "validation" else source_split
    return f"wiki_lingua_{name}_{language}-{short_split}-{number}"


def make_article(rng: random.Random, language: str, gem_id: str) -> Article:
    lex = LEXICONS[language]
    person, *side_people = rng.sample(lex.names, 7)
    city, *side_cities = rng.sample(lex.cities, 7)
    num = str(rng.randrange(2, 100))
    main_slots = {
        "person": person,
        "role": rng.choice(lex.roles),
        "org": rng.choice(lex.orgs),
        "event": rng.choice(lex.events),
        "city": city,
        "day": rng.choice(lex.days),
        "num": num,
        "num2": str(rng.randrange(200, 9000, 50)),
    }
    side_templates = rng.sample(lex.article_sides, rng.randint(2, 4))
    sides = tuple(
        Sentence(
            template,
            {
                "person2": side_people[i],
                "city2": side_cities[i],
                "job": rng.choice(lex.jobs),
                "thing": rng.choice(lex.things),
                "weather": rng.choice(lex.weathers),
                "month": rng.choice(lex.months),
            },
        )
        for i, template in enumerate(side_templates)
    )
    sentences = (
        Sentence(lex.article_main, main_slots),
        Sentence(lex.article_number, main_slots),
        *sides,
    )
    if rng.random() < CLOSING_SENTENCE_RATE:
        sentences += (Sentence(rng.choice(lex.article_closings), {}),)
    entities = {person, city, num, main_slots["num2"]}
    for side in sides:
        for slot in ("person2", "city2"):
            if "{" + slot + "}" in side.template:
                entities.add(side.slots[slot])
    return Article(gem_id, language, main_slots, sentences, sides, frozenset(entities))
