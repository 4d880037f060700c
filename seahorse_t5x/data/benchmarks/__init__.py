"""Readers for the outside benchmarks, one module per benchmark: mFACE, TRUE, METAL, and the
local NLI releases (FEVER-NLI, VitaminC).

Every reader returns a `ReadResult`: the kept examples as raw example dicts in the form the
shared premise/hypothesis preprocessors expect (`premise`, `hypothesis`, `label`, and the
metadata strings `gem_id`, `language`, `dataset`, `system`), plus one `errors.DataError` per
dropped row (file, line, field, reason), so no row is lost silently. A missing file is a
`UserError` that says where to get it; docs/benchmarks.md describes each format.

The package's names are the readers' public interface (`from seahorse_t5x.data import
benchmarks; benchmarks.read_mface(...)`); each lives in its benchmark's module.
"""

from seahorse_t5x.data.benchmarks.common import (
    TEXT_FIELDS,
    ReadResult,
    benchmark_paths,
    normalize_language,
)
from seahorse_t5x.data.benchmarks.metal import (
    ENV_METAL_PATH,
    ENV_XLSUM_ARTICLES,
    METAL_ANNOTATORS,
    METAL_BENCHMARK,
    METAL_LANGUAGES,
    METAL_LLM_PROMPTS,
    METAL_METRICS,
    METAL_SOURCE,
    XLSUM_ARTICLES_SOURCE,
    metal_label,
    metal_llm_metric_name,
    metal_path,
    read_metal,
    read_metal_labels,
    read_metal_llm_scores,
    read_xlsum_articles,
    xlsum_articles_path,
)
from seahorse_t5x.data.benchmarks.mface import (
    ENV_MFACE_PATH,
    MFACE_5LANG,
    MFACE_BINARY_THRESHOLD,
    MFACE_CSV_COLUMNS,
    MFACE_DIMENSIONS,
    MFACE_SOURCE,
    MFACE_SPLITS,
    mface_path,
    read_mface,
)
from seahorse_t5x.data.benchmarks.nli import (
    ENV_FEVER_NLI_DIR,
    ENV_VITAMINC_DIR,
    NLI_SOURCES,
    NLI_SPLIT_FILES,
    nli_dir,
    nli_label,
    nli_split_file,
    read_nli_jsonl,
)
from seahorse_t5x.data.benchmarks.true import (
    ENV_TRUE_DIR,
    TRUE_CSV_COLUMNS,
    TRUE_DATASETS,
    TRUE_QUESTION,
    TRUE_SOURCE,
    read_true,
    true_dir,
    true_file,
)

__all__ = [
    "ENV_FEVER_NLI_DIR",
    "ENV_METAL_PATH",
    "ENV_MFACE_PATH",
    "ENV_TRUE_DIR",
    "ENV_VITAMINC_DIR",
    "ENV_XLSUM_ARTICLES",
    "METAL_ANNOTATORS",
    "METAL_BENCHMARK",
    "METAL_LANGUAGES",
    "METAL_LLM_PROMPTS",
    "METAL_METRICS",
    "METAL_SOURCE",
    "MFACE_5LANG",
    "MFACE_BINARY_THRESHOLD",
    "MFACE_CSV_COLUMNS",
    "MFACE_DIMENSIONS",
    "MFACE_SOURCE",
    "MFACE_SPLITS",
    "NLI_SOURCES",
    "NLI_SPLIT_FILES",
    "TEXT_FIELDS",
    "TRUE_CSV_COLUMNS",
    "TRUE_DATASETS",
    "TRUE_QUESTION",
    "TRUE_SOURCE",
    "XLSUM_ARTICLES_SOURCE",
    "ReadResult",
    "benchmark_paths",
    "metal_label",
    "metal_llm_metric_name",
    "metal_path",
    "mface_path",
    "nli_dir",
    "nli_label",
    "nli_split_file",
    "normalize_language",
    "read_mface",
    "read_metal",
    "read_metal_labels",
    "read_metal_llm_scores",
    "read_nli_jsonl",
    "read_true",
    "read_xlsum_articles",
    "true_dir",
    "true_file",
    "xlsum_articles_path",
]
