"""The leaderboard's page from finished cell records: mean +- std over seeds per task,
algorithm and simulator, the side-by-side table with its disagreement and within-spread
flags, the Markdown and HTML pages and the learning-curve plots (scripts/leaderboard.py
runs the cells and writes these)."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from taigym.scripts.leaderboard import AlgorithmEntry, Protocol, TaskEntry

SIMULATOR_LABELS = {"taigym": "taigym", "gymnasium": "Gymnasium", "dm_control": "dm_control"}
# what each simulator's cells run, for the sentence under the title and the tables' captions
SIMULATOR_ENVS = {"taigym": "taigym's port (`TaiGym/<Task>-v0`)",
                  "gymnasium": "Gymnasium's MuJoCo env (`<Task>-v5`)",
                  "dm_control": "dm_control's Control Suite task (`dm_control/<domain>-<task>-v0`, through its "
                                "Gymnasium adapter)"}


def mean_std(values) -> tuple[float, float]:
    values = [v for v in values if v is not None]
    return (float(np.mean(values)), float(np.std(values))) if values else (math.nan, math.nan)


def simulator_of(record: dict) -> str:
    return record.get("simulator", "taigym")  # records older than the key ran on taigym


def summarize(protocol: Protocol, records: list[dict]) -> list[dict]:
    """One row per (task, algorithm, simulator): mean +- std over seeds of returns and speed."""
    rows = []
    for task in protocol.tasks:
        for alg in protocol.algorithms:
            for simulator in protocol.simulators:
                group = [r for r in records if r["task"] == task.id and r["algorithm"] == alg.name
                         and simulator_of(r) == simulator]
                if group:
                    rows.append(summary_row(protocol, task, alg, simulator, group))
    return rows


def summary_row(protocol: Protocol, task: TaskEntry, alg: AlgorithmEntry, simulator: str, group: list[dict]) -> dict:
    ret, wall, sps = (mean_std([r[k] for r in group]) for k in ("eval_return_mean", "wall_time_s", "env_steps_per_s"))
    comp = group[0]["comparability"]
    return {
        "task": task.id, "algorithm": alg.name, "simulator": simulator, "env_id": group[0]["config"]["task"],
        "seeds": sorted(r["seed"] for r in group), "seeds_planned": len(protocol.seeds), "budget": task.budget,
        "adopted": {r["seed"]: r["adopted_from"]["protocol"] for r in group if r.get("adopted_from")},
        "return_mean": ret[0], "return_std": ret[1],
        "solved_return": task.solved_return,
        "solved_seeds": sum(bool(r.get("solved")) for r in group),
        "wall_time_mean_s": wall[0], "wall_time_std_s": wall[1],
        "steps_per_s_mean": sps[0], "steps_per_s_std": sps[1],
        "settings": {k: comp.get(k) for k in COMPARABILITY_COLUMNS},
    }


def disagree(a: dict | None, b: dict | None) -> bool | None:
    """Whether two summary rows' eval returns differ beyond their spread over seeds:
    ``|mean_a - mean_b| > std_a + std_b``. None when either side has no finished seed."""
    if a is None or b is None or math.isnan(a["return_mean"]) or math.isnan(b["return_mean"]):
        return None
    return abs(a["return_mean"] - b["return_mean"]) > a["return_std"] + b["return_std"]


def within_spread(a: dict | None, b: dict | None) -> bool | None:
    """Whether row ``a``'s mean eval return lies within row ``b``'s spread over seeds:
    ``|mean_a - mean_b| <= std_b``, the protocol's acceptance measure for a port (``a``,
    taigym) against the simulator it ports (``b``). None when either side has no finished seed."""
    if a is None or b is None or math.isnan(a["return_mean"]) or math.isnan(b["return_mean"]):
        return None
    return abs(a["return_mean"] - b["return_mean"]) <= b["return_std"]


DISAGREE_TEMPLATE = ("**disagree**: the simulators' mean eval returns differ by more than the sum of their "
                     "standard deviations over seeds, |mean_taigym − mean_{o}| > std_taigym + std_{o} "
                     "(population std; with one seed any difference counts). **within spread**: the first "
                     "simulator's mean lies within the second's mean ± its std over seeds, "
                     "|mean_taigym − mean_{o}| <= std_{o}.")
DISAGREE_NOTE = DISAGREE_TEMPLATE.format(o="Gymnasium")


def ported_simulators(protocol: Protocol) -> list[str]:
    """The simulators the protocol names besides taigym, in its order."""
    return [s for s in protocol.simulators if s != "taigym"]


def disagree_note(protocol: Protocol) -> str:
    """The flags' definition, written with the simulator the tasks port (``ported`` where
    the protocol's tasks port more than one)."""
    ported = ported_simulators(protocol)
    if len(ported) == 1:
        return DISAGREE_TEMPLATE.format(o=SIMULATOR_LABELS[ported[0]])
    return (DISAGREE_TEMPLATE.format(o="ported") + " Here *ported* is the simulator the task ports: "
            + " or ".join(SIMULATOR_LABELS[s] for s in ported) + ".")


def spread_tally(protocol: Protocol, summary: list[dict]) -> str:
    """`` In all: the first simulator's mean lies within the second's spread on N of M
    tasks (...).``, over the rows with both sides finished, per pair of simulators; nothing
    without such rows."""
    decided = [c for c in comparisons(protocol, summary) if c["within_spread"] is not None]
    if not decided:
        return ""
    parts = []
    for pair in dict.fromkeys(c["simulators"] for c in decided):
        rows = [c for c in decided if c["simulators"] == pair]
        outside = [c["task"].removeprefix("TaiGym/") for c in rows if not c["within_spread"]]
        parts.append(f"within the {SIMULATOR_LABELS[pair[1]]} spread on {len(rows) - len(outside)} of {len(rows)} "
                     "rows" + (f" (outside: {', '.join(outside)})" if outside else ""))
    first = SIMULATOR_LABELS[decided[0]["simulators"][0]]
    return f" In all, the {first} mean lies " + "; ".join(parts) + "."


def comparisons(protocol: Protocol, summary: list[dict]) -> list[dict]:
    """Per (task, algorithm): each simulator's summary row and whether the task's first two
    simulators (taigym and the one it ports) disagree."""
    from taigym.scripts.leaderboard import task_simulators

    out = []
    for task in protocol.tasks:
        sims = tuple(task_simulators(protocol, task.id))
        for alg in protocol.algorithms:
            sides = {r["simulator"]: r for r in summary if r["task"] == task.id and r["algorithm"] == alg.name}
            if sides:
                pair = [sides.get(sim) for sim in sims[:2]]
                out.append({"task": task.id, "algorithm": alg.name, "simulators": sims, "sides": sides,
                            "disagree": disagree(*pair), "within_spread": within_spread(*pair)})
    return out


COMPARABILITY_COLUMNS = ("action_source", "solver", "solver_iterations", "contacts_per_env",
                         "constraint_rows_per_env", "frame_skip", "timestep_s", "integrator", "precision",
                         "sim_device", "policy_device", "num_envs", "sim_threads", "torch_threads",
                         "concurrent_cells", "cpu")


def fmt(value, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 1e5 else f"{value:.3g}"
    return str(value)


def table_rows(protocol: Protocol, summary: list[dict]) -> tuple[list[str], list[list[str]], list[str],
                                                                  list[list[str]]]:
    """Headers and cells of the (first) results table and of the settings table."""
    (_, head, body), *_ = results_tables(protocol, summary)
    return (head, body, *settings_table(protocol, summary))


def results_tables(protocol: Protocol, summary: list[dict]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The results tables, each as (caption, headers, cells): one, captioned "", where every
    task runs on the same simulators; else one per set of simulators (taigym and Gymnasium,
    taigym and dm_control), its headings naming them."""
    if len(protocol.simulators) == 1:
        return [("", *results_table(summary))]
    from taigym.scripts.leaderboard import task_simulators

    groups = list(dict.fromkeys(tuple(task_simulators(protocol, t.id)) for t in protocol.tasks))
    tables = []
    for sims in groups:
        head, body = side_by_side_table(protocol, summary, sims)
        ported = " and ".join(SIMULATOR_ENVS[s] for s in sims if s != "taigym")
        tables.append(("" if len(groups) == 1 else f"Tasks that port {ported}:", head, body))
    return tables


def settings_table(protocol: Protocol, summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    many = len(protocol.simulators) > 1
    s_head = ["task", "algorithm", *(["simulator"] if many else []), *COMPARABILITY_COLUMNS]
    s_body = [[r["task"], r["algorithm"], *([SIMULATOR_LABELS[r["simulator"]]] if many else []),
               *(fmt(r["settings"].get(k), 3) if isinstance(r["settings"].get(k), float)
                 else fmt(r["settings"].get(k)) for k in COMPARABILITY_COLUMNS)]
              for r in summary]
    return s_head, s_body


def return_cell(r: dict | None) -> str:
    return "–" if r is None else f"{fmt(r['return_mean'])} ± {fmt(r['return_std'])}"


def solved_cell(r: dict | None) -> str:
    if r is None or r["solved_return"] is None:
        return "–"
    return f"{r['solved_seeds']}/{len(r['seeds'])} (≥ {r['solved_return']:g})"


def wall_cell(r: dict | None) -> str:
    return "–" if r is None else f"{fmt(r['wall_time_mean_s'])} ± {fmt(r['wall_time_std_s'])}"


def speed_cell(r: dict | None) -> str:
    return "–" if r is None else f"{fmt(r['steps_per_s_mean'], 0)} ± {fmt(r['steps_per_s_std'], 0)}"


def seeds_cell(r: dict | None) -> str:
    return "–" if r is None else f"{len(r['seeds'])}/{r['seeds_planned']}"


def results_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """One simulator: a row per (task, algorithm)."""
    head = ["task", "algorithm", "eval return (mean ± std)", "solved", "seeds", "env steps", "train wall time [s]",
            "env steps/s"]
    body = [[r["task"], r["algorithm"], return_cell(r), solved_cell(r), seeds_cell(r), f"{r['budget']:,}",
             wall_cell(r), speed_cell(r)] for r in summary]
    return head, body


def side_by_side_table(protocol: Protocol, summary: list[dict], sims: tuple[str, ...] | None = None
                       ) -> tuple[list[str], list[list[str]]]:
    """Several simulators: a row per (task, algorithm) of the tasks on ``sims`` (by default the
    protocol's), each measure once per simulator."""
    sims = tuple(sims or protocol.simulators)
    labels = [SIMULATOR_LABELS[s] for s in sims]
    head = ["task", "algorithm", *(f"eval return, {lb}" for lb in labels), "disagree", "within spread",
            *(f"solved, {lb}" for lb in labels), *(f"seeds, {lb}" for lb in labels), "env steps",
            *(f"train wall time [s], {lb}" for lb in labels), *(f"env steps/s, {lb}" for lb in labels)]
    budgets = {t.id: t.budget for t in protocol.tasks}
    body = []
    for c in comparisons(protocol, summary):
        if c["simulators"] != sims:
            continue
        sides = [c["sides"].get(s) for s in sims]
        flag, inside = ({True: "yes", False: "no", None: "–"}[c[k]] for k in ("disagree", "within_spread"))
        body.append([c["task"], c["algorithm"], *map(return_cell, sides), flag, inside, *map(solved_cell, sides),
                     *map(seeds_cell, sides), f"{budgets[c['task']]:,}", *map(wall_cell, sides),
                     *map(speed_cell, sides)])
    return head, body


def simulators_sentence(protocol: Protocol) -> str:
    if len(protocol.simulators) == 1:
        return ""
    ported = [SIMULATOR_ENVS[s] for s in ported_simulators(protocol)]
    theirs = ported[0] if len(ported) == 1 else "the simulator it ports, " + " or ".join(ported)
    return f" Every cell runs on {SIMULATOR_ENVS['taigym']} and on {theirs}, with the same trainer, settings and seeds."


def markdown(protocol: Protocol, summary: list[dict], pending: int, plots: list[str], notes: str = "") -> str:
    """The page; ``notes`` (Markdown, e.g. what explains a task where the simulators differ)
    follows the results table."""
    tables = results_tables(protocol, summary)
    s_head, s_body = settings_table(protocol, summary)

    def md_table(h, rows):
        lines = ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])

    parts = [f"# Leaderboard: {protocol.name} (protocol version {protocol.version})", "",
             (f"Deterministic evaluation over {protocol.eval_episodes} episodes after training for the budget; "
              f"mean ± std over seeds {protocol.seeds}. Wall time is training only (no compilation, no evaluation)."
              + simulators_sentence(protocol) + adoption_sentence(summary)),
             ""]
    if pending:
        parts += [f"**{pending} cell(s) not finished yet**: rows show the seeds done so far.", ""]
    for caption, head, body in tables:
        parts += [caption, ""] if caption else []
        parts += [md_table(head, body), ""]
    if len(protocol.simulators) > 1:
        parts += [disagree_note(protocol) + spread_tally(protocol, summary), ""]
    if notes.strip():
        parts += [notes.strip(), ""]
    parts += ["## What makes these numbers comparable", "", md_table(s_head, s_body), ""]
    parts += [f"![{p}]({p})" for p in plots]
    return "\n".join(parts) + "\n"


def adoption_sentence(summary: list[dict]) -> str:
    """Which cells are an earlier protocol's records (``adopts``), or nothing."""
    adopted = [(seed, source) for row in summary for seed, source in row.get("adopted", {}).items()]
    if not adopted:
        return ""
    sources = ", ".join(sorted({source for _, source in adopted}))
    seeds = sorted({int(seed) for seed, _ in adopted})
    return (f" {len(adopted)} cells (seeds {seeds}) are {sources}'s finished records, adopted because their "
            f"settings (task, simulator, trainer, seed, budget, evaluation, training config) are this "
            f"protocol's; the others ran under this protocol.")


def html_page(protocol: Protocol, summary: list[dict], pending: int, plots: list[str]) -> str:
    tables = results_tables(protocol, summary)
    s_head, s_body = settings_table(protocol, summary)
    esc = html.escape

    def table(h, rows):
        th = "".join(f"<th>{esc(c)}</th>" for c in h)
        trs = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"

    note = f"<p><b>{pending} cell(s) not finished yet</b>: rows show the seeds done so far.</p>" if pending else ""
    results = "".join((f"<p>{esc(caption.replace('`', ''))}</p>" if caption else "") + table(head, body)
                      for caption, head, body in tables)
    flag_note = (f"<p>{esc((disagree_note(protocol) + spread_tally(protocol, summary)).replace('**', ''))}</p>"
                 if len(protocol.simulators) > 1 else "")
    imgs = "".join(f'<img src="{esc(p)}" alt="{esc(p)}">' for p in plots)
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(protocol.name)}</title>"
            f"<style>{style}</style></head><body><h1>Leaderboard: {esc(protocol.name)} (protocol version "
            f"{protocol.version})</h1><p>Deterministic evaluation over {protocol.eval_episodes} episodes after "
            f"training for the budget; mean ± std over seeds {esc(str(protocol.seeds))}. Wall time is training "
            f"only.{esc((simulators_sentence(protocol) + adoption_sentence(summary)).replace('`', ''))}</p>{note}{results}{flag_note}"
            f"<h2>What makes these numbers comparable</h2>"
            f"{table(s_head, s_body)}{imgs}</body></html>\n")


def curve_label(record: dict, many_simulators: bool) -> str:
    if not many_simulators:
        return record["algorithm"]
    return f"{record['algorithm']} on {SIMULATOR_LABELS[simulator_of(record)]}"


def plot_task_curves(task: TaskEntry, records: list[dict], png: Path, many_simulators: bool = False) -> bool:
    """Mean training return over seeds per algorithm (and simulator), against env steps and wall time."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        if r["task"] == task.id and r["progress"]:
            groups.setdefault(curve_label(r, many_simulators), []).append(r)
    if not groups:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for i, (name, group) in enumerate(sorted(groups.items())):
        for ax, key in ((axes[0], "env_steps"), (axes[1], "wall_time_s")):
            # each seed's curve on a common x grid, where every seed has rows
            start = max(r["progress"][0][key] for r in group)
            end = min(r["progress"][-1][key] for r in group)
            grid = np.linspace(start, max(start, end), 100)
            ys = np.array([np.interp(grid, [p[key] for p in r["progress"]], [p["return_mean"] for p in r["progress"]])
                           for r in group])
            mean, std = ys.mean(0), ys.std(0)
            ax.plot(grid, mean, color=f"C{i}", label=f"{name} ({len(group)} seeds)")
            ax.fill_between(grid, mean - std, mean + std, color=f"C{i}", alpha=0.2, linewidth=0)
    if task.solved_return is not None:
        for ax in axes:
            ax.axhline(task.solved_return, color="gray", linestyle="--", linewidth=1)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("training wall time [s]")
    axes[0].set_ylabel("mean training episode return")
    axes[0].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"{task.id}: mean ± std over seeds")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return True
