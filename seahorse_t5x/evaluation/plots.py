"""PNG plots of the meta-evaluation and of the dataset.

Figures are built with `matplotlib.figure.Figure` and the Agg canvas directly, never through
pyplot: no global backend state, no display needed, and a notebook importing this module
keeps its own backend. Each function writes one PNG and returns its path.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from sklearn.metrics import roc_curve

from seahorse_t5x.evaluation import protocol_stats, stats, tables

_DPI = 100


def _figure(panels: int, width: float = 4.0, height: float = 3.4) -> tuple[Figure, list]:
    cols = min(3, max(panels, 1))
    rows = max(1, -(-panels // cols))
    fig = Figure(figsize=(width * cols, height * rows), dpi=_DPI)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(max(panels, 1))]
    return fig, axes


def _save(fig: Figure, path: str | pathlib.Path, right: float = 0.97) -> str:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed spacing instead of tight_layout: tight_layout renders every figure a second time.
    fig.subplots_adjust(left=0.08, right=right, bottom=0.12, top=0.88, hspace=0.5, wspace=0.3)
    fig.savefig(path, format="png")
    return str(path)


def _questions(frame: pd.DataFrame) -> list[str]:
    return sorted(frame["question"].unique().tolist(), key=tables.question_sort_key)


def roc_curves(frame: pd.DataFrame, path: str | pathlib.Path, title: str = "") -> str:
    """One ROC panel per question, one curve per metric (0/1 labels only).

    Args:
      frame: score rows (`metric`, `question`, `label`, `score`) of one benchmark, without
        missing scores.
    """
    questions = _questions(frame)
    fig, axes = _figure(len(questions))
    for ax, question in zip(axes, questions, strict=False):
        rows = frame[frame["question"] == question]
        undefined = []
        for metric, group in rows.groupby("metric", sort=False):
            labels, scores = group["label"].to_numpy(), group["score"].to_numpy()
            result = stats.binary_metrics(labels, scores)
            if result["roc_auc"] is None:
                undefined.append(result["reasons"]["roc_auc"])
                continue
            fpr, tpr, _ = roc_curve(labels, scores)
            ax.plot(fpr, tpr, label=f"{metric} ({tables.format_value(result['roc_auc'])})")
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
        ax.set_title(tables.question_header(question))
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        if len(undefined) < rows["metric"].nunique():
            ax.legend(fontsize="small", loc="lower right")
        else:  # no curve: the panel says why instead of staying blank
            reason = "; ".join(dict.fromkeys(undefined))
            ax.text(0.5, 0.5, f"ROC-AUC undefined:\n{reason}", ha="center", fontsize="small")
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def probability_scale(scores: np.ndarray) -> np.ndarray | None:
    """Scores as probabilities for a calibration plot: as they are when in [0, 1], `exp`
    when all are <= 0 (log-probabilities, as T5X's score mode gives), else None."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size and scores.min() >= 0 and scores.max() <= 1:
        return scores
    if scores.size and scores.max() <= 0:
        return np.exp(scores)
    return None


def reliability_diagram(
    frame: pd.DataFrame, path: str | pathlib.Path, bins: int = 10, title: str = ""
) -> str:
    """Calibration: share of Yes per score bin against the bin's mean score, per question.

    Metrics whose scores are not probabilities (see `probability_scale`) are left out.
    """
    questions = _questions(frame)
    fig, axes = _figure(len(questions))
    edges = np.linspace(0.0, 1.0, bins + 1)
    for ax, question in zip(axes, questions, strict=False):
        rows = frame[frame["question"] == question]
        for metric, group in rows.groupby("metric", sort=False):
            probs = probability_scale(group["score"].to_numpy())
            if probs is None:
                continue
            labels = group["label"].to_numpy()
            which = np.clip(np.digitize(probs, edges[1:-1]), 0, bins - 1)
            mean_score, yes_share = [], []
            for b in range(bins):
                mask = which == b
                if mask.any():
                    mean_score.append(probs[mask].mean())
                    yes_share.append(labels[mask].mean())
            ax.plot(mean_score, yes_share, marker="o", markersize=3, label=metric)
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(tables.question_header(question))
        ax.set_xlabel("mean score in bin")
        ax.set_ylabel("share of Yes")
        ax.legend(fontsize="small", loc="upper left")
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def label_correlation_heatmap(matrix: pd.DataFrame, n_items: int, path: str | pathlib.Path) -> str:
    """The paper's Figure 3: Pearson correlation between the questions' human labels."""
    fig, (ax,) = _figure(1, width=5.2, height=4.4)
    image = ax.imshow(matrix.to_numpy(), vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(matrix.columns)), labels=list(matrix.columns))
    ax.set_yticks(range(len(matrix.index)), labels=list(matrix.index))
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            value = matrix.iat[i, j]
            dark = not np.isnan(value) and abs(value) > 0.6
            ax.text(
                j,
                i,
                tables.format_value(value),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
            )
    ax.set_title(f"Correlation of human labels ({n_items} items)")
    fig.colorbar(image, ax=ax)
    return _save(fig, path)


def slice_bars(
    records: Sequence[Mapping],
    path: str | pathlib.Path,
    statistic: str = "roc_auc",
    field: str = "language",
) -> str:
    """Bars of `statistic` per slice value (e.g. language), one panel per question, one bar
    colour per metric; undefined values are left empty.

    Args:
      records: breakdown records of one benchmark (`metric`, `question`, `group`, statistic).
    """
    questions = sorted({r["question"] for r in records}, key=tables.question_sort_key)
    groups = sorted({r["group"] for r in records})
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    fig, axes = _figure(len(questions))
    width = 0.8 / max(len(metrics), 1)
    positions = np.arange(len(groups))
    for ax, question in zip(axes, questions, strict=False):
        for k, metric in enumerate(metrics):
            values = {
                r["group"]: r.get(statistic)
                for r in records
                if r["question"] == question and r["metric"] == metric
            }
            heights = [np.nan if values.get(g) is None else values[g] for g in groups]
            ax.bar(positions + k * width, heights, width=width, label=metric)
        ax.set_xticks(positions + width * (len(metrics) - 1) / 2, labels=groups, fontsize="small")
        ax.set_title(tables.question_header(question))
        ax.set_ylabel(statistic)
        if statistic == "roc_auc":
            ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
            ax.set_ylim(0, 1)
    # One legend for the figure: per-panel legends would hide the bars.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncol=min(len(metrics), 4), fontsize="small")
    fig.suptitle(f"{statistic} by {field}", x=0.3)
    return _save(fig, path)


def yes_rate_bars(rates: pd.DataFrame, path: str | pathlib.Path, title: str) -> str:
    """Grouped bars of the share of Yes for Q1..Q6, one colour per row of `rates` (in its order)."""
    fig, (ax,) = _figure(1, width=9.0, height=3.6)
    width = 0.8 / max(len(rates.index), 1)
    positions = np.arange(rates.shape[1])
    for k, key in enumerate(rates.index):
        heights = rates.loc[key].to_numpy(dtype=float)
        ax.bar(positions + k * width, heights, width=width, label=str(key))
    centres = positions + width * (len(rates.index) - 1) / 2
    ax.set_xticks(centres, labels=list(tables.QUESTION_HEADERS))
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of Yes")
    ax.set_title(title)
    # Outside the axes: inside, the legend would hide the tallest bars (Q1-Q3).
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path, right=0.8)


def system_level_scatter(frame: pd.DataFrame, path: str | pathlib.Path, title: str = "") -> str:
    """System-level scatter: each system's mean human score (x) against its mean metric
    score (y), one panel per (dimension, metric), Kendall tau in the panel title.

    Args:
      frame: score rows of one benchmark (`metric`, `question`, `system`, `label`, `score`).
    """
    panels = list(frame.groupby(["question", "metric"], sort=False))
    fig, axes = _figure(len(panels))
    for ax, ((question, metric), rows) in zip(axes, panels, strict=False):
        systems, human, score = protocol_stats.system_means(
            rows["system"].tolist(), rows["label"].to_numpy(), rows["score"].to_numpy()
        )
        ax.scatter(human, score, s=18)
        for name, x, y in zip(systems, human, score, strict=True):
            ax.annotate(name, (x, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
        tau = protocol_stats.correlation("kendall", score, human)
        ax.set_title(f"{question} / {metric}: tau {tables.format_value(tau, 2)}", fontsize=8)
        ax.set_xlabel("mean human score")
        ax.set_ylabel("mean metric score")
    if title:
        fig.suptitle(f"{title}: system level")
    return _save(fig, path)
