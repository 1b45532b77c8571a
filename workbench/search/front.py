"""A search's report: `pareto.json` (every model, the protocol's numbers), `pareto.png`, and the
front's models in `front/`. It is built from what has finished in the search's folder (trial
results, final trainings), so it can be written after every finished trial and read back by
`--collect-only`; protocol.py decides every comparison in it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from safeio import atomic_path, write_bytes_atomic, write_json_atomic
from workbench.search import protocol, stats
from workbench.search.costs import UNITS
from workbench.search.evaluation import outcomes, read_final
from workbench.search.plan import model_job

SELECTION = (
    "Pareto front of (mean validation accuracy over the final seeds, exact cost) over "
    "the search's models; every comparison and 'dominates' on the validation split; "
    "the test split evaluated once per model and seed, reported, never used to select"
)


def _trainings(dirs: list[str]) -> tuple[list[dict], list[dict]]:
    """The finished final trainings among `dirs`: (their results, their per-image outcomes)."""
    done = [(read_final(d), d) for d in dirs]
    done = [(r, d) for r, d in done if r is not None]
    return [r for r, _ in done], [outcomes(d) for _, d in done]


def _entry(name: str, role: str, arch, results: list[dict], cost: str) -> dict:
    rows = protocol.seed_rows(results)
    entry = {
        "name": name,
        "role": role,
        "arch": arch.as_dict() if hasattr(arch, "as_dict") else arch,
        "arch_text": results[0]["arch_text"],
        "seeds": rows,
        "costs": {
            k: float(np.mean([r["costs"][k] for r in results]))
            for k in results[0]["costs"]
            if results[0]["costs"][k] is not None
        },
        "files": {k: v for k, v in results[0].get("files", {}).items() if k in ("onnx", "card")},
    }
    if results[0].get("hardware"):  # the joint search: the array the seeds' networks share
        entry["hardware"] = results[0]["hardware"]
    entry["accuracy"], entry["intervals"] = {}, {}
    for split in ("val", "test"):
        s = protocol.accuracy_summary(rows, split)
        entry["accuracy"][split] = s["mean"]
        entry["intervals"][split] = [s["low"], s["high"]]
    entry["cost"] = entry["costs"][cost]
    entry["train_seconds"] = float(sum(r["seconds"] for r in results))  # its final trainings
    return entry


def _compare(entry: dict, outs: list[dict], zoo: dict, zoo_outs: list[dict], fraction: float) -> None:
    """entry vs the zoo architecture, on the seeds both have: paired comparisons, dominance."""
    common = sorted({r["seed"] for r in entry["seeds"]} & {r["seed"] for r in zoo["seeds"]})
    a = [outs[[r["seed"] for r in entry["seeds"]].index(k)] for k in common]
    b = [zoo_outs[[r["seed"] for r in zoo["seeds"]].index(k)] for k in common]
    entry["cost_vs_zoo"] = entry["cost"] / zoo["cost"]
    entry["vs_zoo"] = {split: protocol.paired(a, b, split) for split in ("val", "test")}
    dom = protocol.dominance(entry["cost_vs_zoo"], entry["vs_zoo"]["val"], fraction)
    entry["dominates_zoo"], entry["dominance"] = dom["dominates"], dom["how"]


def build(opts, results: list[dict], plan: list[dict], rank: dict | None = None) -> dict:
    """The pareto.json document of the search `opts` from its finished trial results and the
    baseline plan (plan.py), whatever has finished of their final trainings."""
    configs = opts.trial_configs()
    first = configs[0]
    models_dir = Path(opts.out).resolve() / "models"
    outs_of: dict[str, list[dict]] = {}
    search, unfinished_models = [], []
    for r in results:
        if not r.get("finals"):  # the fabric: no final trainings to pair
            search.append(_fabric_entry(r, opts.cost))
            continue
        done, outs = _trainings(
            [model_job(first, r["arch"], k, models_dir).out for k in range(first.final_seeds)]
        )
        entry = _entry(r["name"], "search", r["arch"], done, opts.cost)
        entry.update(
            {
                k: r[k]
                for k in ("budget", "lambda", "seed", "searched_cost", "extracted_probability", "seconds")
            }
        )
        entry["budget_ratio"] = entry["cost"] / r["budget"]
        entry["projection_flips"] = len(r.get("projection", []))
        entry["accuracy"]["supernet_val"] = r["accuracy"].get("supernet_val")
        search.append(entry)
        outs_of[entry["name"]] = outs
    by_role: dict[str, list[dict]] = {"random": [], "width": []}
    zoo = None
    zoo_infeasible = None
    for p in plan:
        if p.get("infeasible"):
            zoo_infeasible = p["infeasible"]
            continue
        dirs = [model_job(first, p["arch"], k, models_dir).out for k in range(first.final_seeds)]
        done, outs = _trainings(dirs)
        if not done:
            unfinished_models.append(p["name"])
            continue
        entry = _entry(p["name"], p["role"], p["arch"], done, opts.cost)
        entry.update({k: p[k] for k in ("budget", "for_trial", "draws", "factor") if k in p})
        outs_of[entry["name"]] = outs
        if p["role"] == "zoo":
            zoo = entry
        else:
            by_role[p["role"]].append(entry)
        if len(done) < first.final_seeds:
            unfinished_models.append(p["name"])
    everything = search + by_role["random"] + by_role["width"]
    if zoo is not None:
        for e in everything:
            if e["name"] in outs_of:
                _compare(e, outs_of[e["name"]], zoo, outs_of[zoo["name"]], opts.cost_fraction)
    front = set(protocol.pareto(search, opts.cost)) if search else set()
    for e in search:
        e["on_front"] = e["name"] in front
    unfinished = sorted({c.name for c in configs} - {r["name"] for r in results})
    doc = {
        "family": opts.family,
        "cost": opts.cost,
        "unit": UNITS[opts.cost],
        "data": opts.data,
        "complete": not unfinished and not unfinished_models,
        "command": opts.command,
        "selection": SELECTION,
        "protocol": {
            "final_seeds": first.final_seeds,
            "final_epochs": first.final_epochs,
            "final_float_epochs": first.final_float_epochs,
            "recipe": "the family's zoo recipe for the data set, the same for every model",
            "baselines": list(opts.baselines),
            "cost_fraction": opts.cost_fraction,
            "alpha": stats.ALPHA,
            "bootstrap_rounds": 10_000,
            "intervals": "95% Student t over the final seeds",
            "paired": "bootstrap over validation (test) images of the per-image "
            "fraction of seeds right; McNemar per seed pair for reference",
        },
        "zoo": zoo,
        **({"zoo_infeasible": zoo_infeasible} if zoo_infeasible else {}),
        "unfinished": unfinished,
        "unfinished_models": unfinished_models,
        "models": search,
        "baselines": by_role,
        "budgets": protocol.budget_comparisons(
            {"search": search, **by_role}, opts.cost, sorted(set(opts.budgets)), lambda m: outs_of[m["name"]]
        )
        if search and all(e["name"] in outs_of for e in search)
        else [],
        "rank_agreement": rank,
    }
    settings = first.cost_settings()
    if settings.joint:
        doc["hardware"] = {
            "device": settings.fpga_device,
            "utilisation_limit": settings.utilisation,
            "arrays": settings.arrays or "default (workbench/search/hardware.py)",
            "clock_mhz": settings.clock_mhz,
            "rule": "each network on the fastest candidate array that fits the chip, at that "
            "array's modelled clock (fpga/devices.py)",
        }
    return doc


def _fabric_entry(r: dict, cost: str) -> dict:
    """A fabric trial (float networks, one training): reported as it is, outside the protocol."""
    return {
        "name": r["name"],
        "role": "search",
        "arch": r["arch"],
        "arch_text": r["arch_text"],
        "costs": r["costs"],
        "cost": r["costs"][cost],
        "accuracy": r["accuracy"],
        "budget": r["budget"],
        "lambda": r["lambda"],
        "seed": r["seed"],
        "searched_cost": r["searched_cost"],
        "seconds": r["seconds"],
        "files": {},
        "budget_ratio": r["costs"][cost] / r["budget"],
        "seeds": [],
    }


def rank_agreement(opts, doc: dict) -> dict | None:
    """Kendall's tau between one trained super network's validation accuracy of every model's
    architecture (its batch norms recalibrated for each) and that architecture's mean validation
    accuracy after final training (protocol.rank_agreement). The super network is the first
    trial's that kept one; the architectures outside its space are left out."""
    import torch

    from models.datasets import load_dataset
    from models.train.common import to_tensors
    from workbench.search.families import family as get_family
    from workbench.search.trial import subnet_accuracy

    cfg = next((c for c in opts.trial_configs() if (Path(c.out) / "supernet.pt").exists()), None)
    if cfg is None:
        return None
    fam = get_family(cfg.family)
    train, val = load_dataset(cfg.data, "train"), load_dataset(cfg.data, "val")
    net = fam.supernet(fam.make_space(val.image_shape, val.classes, cfg.space), cfg.init_prob)
    net.load_state_dict(torch.load(Path(cfg.out) / "supernet.pt", weights_only=False)["net"])
    x_train, val_t = to_tensors(train)[0], to_tensors(val)
    models = (
        doc["models"]
        + doc["baselines"]["random"]
        + doc["baselines"]["width"]
        + ([doc["zoo"]] if doc.get("zoo") else [])
    )
    supernet, final = {}, {}
    for m in models:
        h = net.encode(fam.arch_from_dict(m["arch"]))
        if h is not None and m["name"] not in supernet:
            supernet[m["name"]] = subnet_accuracy(net, h, x_train, val_t, cfg.bn_images)
            final[m["name"]] = m["accuracy"]["val"]
    res = protocol.rank_agreement(supernet, final)
    res.update(
        supernet_of=cfg.name,
        models={n: {"supernet_val": supernet[n], "final_val": final[n]} for n in supernet},
    )
    return res


def compute_minutes(doc: dict) -> float:
    """Minutes of computing the report stands on: every trial's super network and every
    distinct architecture's final trainings (one core each; what several ran at once counts in
    full)."""
    supernets = sum(m.get("seconds", {}).get("supernet", 0.0) for m in doc["models"])
    archs = {}
    for m in (
        doc["models"]
        + doc.get("baselines", {}).get("random", [])
        + doc.get("baselines", {}).get("width", [])
        + ([doc["zoo"]] if doc.get("zoo") else [])
    ):
        archs.setdefault(m.get("arch_text"), m.get("train_seconds", 0.0))
    return (supernets + sum(archs.values())) / 60


def write(opts, doc: dict) -> dict:
    write_json_atomic(Path(opts.out) / "pareto.json", doc)
    return doc


def plot(doc: dict, path: Path) -> Path:
    """Validation accuracy (mean over the final seeds, 95% interval) against the exact cost: the
    search's models and front, random search, width scaling, the zoo architecture; the budgets
    as dotted lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    styles = {
        "search": ("o", "tab:blue", "search (BSN)"),
        "random": ("^", "tab:orange", "random search"),
        "width": ("s", "tab:green", "width-scaled zoo"),
    }
    groups = {"search": doc["models"], **doc.get("baselines", {})}
    for role, models in groups.items():
        if not models:
            continue
        marker, colour, label = styles[role]
        x = [m["cost"] for m in models]
        y = [100 * m["accuracy"]["val"] for m in models]
        err = None
        if all(m.get("intervals") for m in models):
            err = np.array(
                [
                    [100 * (m["accuracy"]["val"] - m["intervals"]["val"][0]) for m in models],
                    [100 * (m["intervals"]["val"][1] - m["accuracy"]["val"]) for m in models],
                ]
            )
        ax.errorbar(
            x,
            y,
            yerr=err,
            fmt=marker,
            color=colour,
            capsize=3,
            label=label,
            markerfacecolor="none" if role == "search" else colour,
        )
    for m in [*doc["models"], *(doc.get("zoo") and [doc["zoo"]] or [])]:
        if m.get("hardware"):  # the joint search: each model's array beside it
            ax.annotate(
                m["hardware"]["array"],
                (m["cost"], 100 * m["accuracy"]["val"]),
                xytext=(4, -10),
                textcoords="offset points",
                fontsize=7,
                color="dimgrey",
            )
    front = sorted((m["cost"], 100 * m["accuracy"]["val"]) for m in doc["models"] if m.get("on_front"))
    if front:
        # the front's models filled over their hollow search markers (a line alone is invisible
        # when the front holds one model), joined by its staircase when there are several
        ax.plot(
            [c for c, _ in front],
            [v for _, v in front],
            "o",
            color="tab:blue",
            ms=7,
            label="search's Pareto front" + (" (one model)" if len(front) == 1 else ""),
        )
        if len(front) > 1:
            ax.step([c for c, _ in front], [v for _, v in front], where="post", color="tab:blue", lw=1.2)
    zoo = doc.get("zoo")
    if zoo:
        lo, hi = zoo["intervals"]["val"]
        ax.errorbar(
            [zoo["cost"]],
            [100 * zoo["accuracy"]["val"]],
            yerr=[[100 * (zoo["accuracy"]["val"] - lo)], [100 * (hi - zoo["accuracy"]["val"])]],
            fmt="*",
            ms=14,
            color="black",
            capsize=3,
            label="zoo architecture",
        )
    for b in sorted({m["budget"] for m in doc["models"]}):
        ax.axvline(b, color="grey", ls=":", lw=1)
    unit = doc["unit"]  # "cycles per image": the cost's name once, not "cycles (cycles per image)"
    label = unit if unit.split()[0] == doc["cost"] else f"{doc['cost']} ({unit})"
    ax.set_xlabel(f"{label}; dotted lines: the budgets")
    ax.set_ylabel("validation accuracy (%), mean and 95% interval over seeds")
    seeds = doc.get("protocol", {}).get("final_seeds")
    ax.set_title(
        f"{doc['family']} family on {doc['data']}"
        + (f", arrays searched on the {doc['hardware']['device']}" if doc.get("hardware") else "")
        + ": every model trained with the same "
        f"recipe{f' over {seeds} seeds' if seeds else ''}",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def publish(opts, doc: dict) -> list[Path]:
    """The front's models (seed 0's ONNX and card) copied into DIR/front/."""
    front_dir = Path(opts.out) / "front"
    out = []
    for m in doc["models"]:
        if m.get("on_front") and m["files"].get("onnx"):
            for key in ("onnx", "card"):
                src = Path(m["files"][key])
                write_bytes_atomic(front_dir / f"{m['name']}{src.suffix}", src.read_bytes())
            out.append(front_dir / f"{m['name']}.onnx")
    return out


# -- the report as text: the console's summary and the docs' tables ------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _acc(m: dict, split: str) -> str:
    lo, hi = m["intervals"][split] if m.get("intervals") else (None, None)
    return (
        f"{_pct(m['accuracy'][split])} [{_pct(lo)}, {_pct(hi)}]"
        if lo is not None
        else _pct(m["accuracy"][split])
    )


def _counts(m: dict, split: str) -> str:
    return " ".join(f"{r[f'{split}_correct']}/{r[f'{split}_total']}" for r in m.get("seeds", []))


def p_text(c: dict) -> str:
    """A bootstrap p-value: 0 means none of the resamples crossed zero."""
    return f"p < {1 / c['rounds']:.0e}" if c["p"] == 0 else f"p {c['p']:.3g}"


def _diff(c: dict) -> str:
    return (
        f"{100 * c['diff']:+.2f} [{100 * c['low']:+.2f}, {100 * c['high']:+.2f}], {p_text(c)}: {c['verdict']}"
    )


def _vs(m: dict, split: str = "val") -> str:
    c = m.get("vs_zoo", {}).get(split)
    return _diff(c) if c else "-"


def model_rows(doc: dict) -> list[dict]:
    """One row per model of the report (the zoo architecture first, then the search's, then
    the baselines'), the columns of both tables below."""
    rows = []
    groups = (
        ([doc["zoo"]] if doc.get("zoo") and doc["zoo"].get("seeds") else [])
        + doc["models"]
        + doc.get("baselines", {}).get("random", [])
        + doc.get("baselines", {}).get("width", [])
    )
    joint = any(m.get("hardware") for m in groups)
    for m in groups:
        rows.append(
            {
                "model": m["name"] + (" *" if m.get("on_front") else ""),
                "role": m["role"],
                "arch": m["arch_text"],
                **({"array": hardware_text(m.get("hardware"))} if joint else {}),
                "cost": f"{m['cost']:,.6g}",
                "budget": (
                    f"{m['budget']:,.6g} ({m['cost'] / m['budget']:.2f}x)" if m.get("budget") else "-"
                ),
                "val": _acc(m, "val"),
                "val counts": _counts(m, "val"),
                "test": _acc(m, "test"),
                "test counts": _counts(m, "test"),
                "vs zoo (val)": _vs(m),
                "dominates zoo": (("yes" if m["dominates_zoo"] else "no") if "dominates_zoo" in m else "-"),
                "P(arch)": (
                    f"{m['extracted_probability']:.3f}" if m.get("extracted_probability") is not None else "-"
                ),
            }
        )
    return rows


def hardware_text(hw: dict | None) -> str:
    """The joint search's array of a model: shape, CMAX, clock (and where it comes from), the
    largest share of the chip."""
    if not hw:
        return "-"
    used = max(hw["used"].values())
    return (
        f"{hw['array']} CMAX {hw['cmax']}, {hw['clock']['mhz']:.4g} MHz ({hw['clock']['source']}), "
        f"{100 * used:.0f} % of the {hw['device']}"
    )


def budget_rows(doc: dict) -> list[dict]:
    rows = []
    for b in doc.get("budgets", []):
        row = {"budget": f"{b['budget']:,.6g}", "search": b["search"] or "-"}
        for role in ("random", "width"):
            e = b.get(role, {})
            if e.get("val"):
                row[f"vs {role}"] = f"{e['model']}: {_diff(e['val'])}"
            else:
                row[f"vs {role}"] = e.get("model") or "-"
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    if not rows:
        return "(none)\n"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def verdict_line(doc: dict) -> str:
    """In words: at how many budgets the search is significantly better than, not different
    from, or worse than each baseline (validation, paired)."""
    parts = []
    for role, what in (("random", "random search"), ("width", "width scaling")):
        verdicts = [b[role]["val"]["verdict"] for b in doc["budgets"] if b.get(role, {}).get("val")]
        if not verdicts:
            continue
        n = len(verdicts)
        counts = [
            (verdicts.count(v), label)
            for v, label in (
                ("better", "better"),
                ("no significant difference", "not significantly different"),
                ("worse", "worse"),
            )
        ]
        parts.append(
            f"against {what} the search is "
            + ", ".join(f"{label} at {c} of {n} budgets" for c, label in counts if c)
        )
    zoo = [m["name"] for m in doc["models"] if m.get("dominates_zoo")]
    line = "; ".join(parts) + "." if parts else ""
    line = line[:1].upper() + line[1:]
    if doc.get("zoo"):
        line += (
            f" {len(zoo)} of its {len(doc['models'])} models dominate the zoo architecture"
            f"{': ' + ', '.join(zoo) if zoo else ''}."
        )
    return line.strip()


def summary(doc: dict) -> str:
    """The report for the console and the docs: the protocol, every model, each budget's
    comparisons, the rank agreement; accuracies in % as mean [95% interval] over the final
    seeds, counts as correct/total per seed."""
    p = doc.get("protocol", {})
    head = (
        f"{doc['family']} family on {doc['data']}, cost {doc['cost']} ({doc['unit']}); "
        f"{p.get('final_seeds', 1)} final seed(s) per model, one recipe (intervals: 95% t, "
        f"cut at 0 and 100%); selection and "
        f"comparisons on validation, test reported only; dominance: cost <= "
        f"{p.get('cost_fraction', 1.0):g}x the zoo's and validation not significantly worse"
        f" (paired bootstrap over images, alpha {p.get('alpha', 0.05)}); * = on the front"
    )
    if doc.get("hardware"):
        hw = doc["hardware"]
        head += (
            f"; array: per model the fastest candidate that fits the {hw['device']} within "
            f"{100 * hw['utilisation_limit']:.0f} %, at its modelled clock"
        )
    if doc.get("zoo_infeasible"):
        head += f"; no zoo baseline: the zoo {doc['zoo_infeasible']}"
    text = [head, "", markdown(model_rows(doc))]
    if doc.get("budgets"):
        text += [
            "At each budget: the search's best model (validation) against each baseline's "
            "best within the budget, difference in validation accuracy (points) [95% "
            "interval], p:",
            "",
            markdown(budget_rows(doc)),
            verdict_line(doc),
            "",
        ]
    rank = doc.get("rank_agreement")
    if rank and rank.get("tau") is not None:
        text.append(
            f"Rank agreement (super network of {rank['supernet_of']} vs final training, "
            f"validation, {rank['n']} architectures): Kendall tau {rank['tau']:.3f} "
            f"(p {rank['p']:.3g})\n"
        )
    return "\n".join(text)
