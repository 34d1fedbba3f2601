"""The lesam figures, in the shared style, each with its tidy CSV and provenance.

Each builder draws what its job was given (:class:`sharpness.lesam.records.Given`): the
runs its rule names, known from their records, or the evaluation file."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from sharpness.evidence.records import FINGERPRINTS, train_record, train_records_text
from sharpness.io import read_jsonl
from sharpness.lesam import report
from sharpness.lesam.records import Given, Run, by_label, files_of, read_sentence
from sharpness.lesam.tables import evaluated
from sharpness.plots import method_color, method_label, new_figure
from sharpness.runs.seal import read_verified

PathLike = str | os.PathLike[str]


def build_fig_dynamics(given: Given, out: PathLike) -> dict[str, Any]:
    """Test accuracy per epoch (mean over seeds, band = min..max) and the LE-SAM − SAM gap."""
    spec = given.spec
    runs = by_label(given.runs, spec["group"], spec["optimizers"])
    read = [r for members in runs.values() for r in members]
    rows, curves = [], {}
    for lab, members in runs.items():
        per_seed = []
        for run in members:
            ep = [r for r in read_verified(run.folder / "metrics.jsonl", read_jsonl,
                                           what="lesam fig_dynamics")
                  if r.get("kind") == "epoch" and "test_acc" in r]
            per_seed.append({r["epoch"]: r["test_acc"] for r in ep})
            rows += [{"optimizer": lab, "run": run.folder.name, "epoch": r["epoch"],
                      "test_acc": r["test_acc"], "train_loss": r["train_loss"],
                      "train_acc": r.get("train_acc"), **run_columns(run)} for r in ep]
        epochs = sorted(set.intersection(*(set(p) for p in per_seed)))
        acc = np.array([[p[e] for e in epochs] for p in per_seed]) * 100
        curves[lab] = (np.array(epochs), acc)
    with new_figure(out, 1, 2, figsize=(9, 3.4), stand_ins=spec.get("stand_ins", [])) as f:
        axes = f.axes
        for lab, (ep, acc) in curves.items():
            c = method_color(lab)
            axes[0].plot(ep, acc.mean(0), marker="o", color=c, label=method_label(lab))
            axes[0].fill_between(ep, acc.min(0), acc.max(0), color=c, alpha=0.2)
        axes[0].set(xlabel="epoch", ylabel="test accuracy (%)")
        axes[0].legend()
        if "lesam" in curves and "sam" in curves:
            ep = curves["sam"][0]
            gap = curves["lesam"][1].mean(0) - curves["sam"][1].mean(0)
            axes[1].bar(ep, gap, color=method_color("lesam"))
            axes[1].axhline(0, color="k", lw=0.8)
            rows += [{"optimizer": "lesam-sam", "epoch": int(e), "gap": float(g)}
                     for e, g in zip(ep, gap, strict=True)]
        axes[1].set(xlabel="epoch", ylabel="LE-SAM − SAM (points)")
        f.add_rows(rows)
        f.title(spec["title"])
        n_seeds = len({r.seed for r in read})
        over = (f"mean over {n_seeds} seeds, band = range" if n_seeds > 1
                else "one seed, no band")
        caption = (f"{spec['title']}: test accuracy along training ({over}) and the "
                   f"LE-SAM − SAM gap per epoch. Data used: {spec['data_used']}. "
                   + read_sentence(read))
        return f.save(caption, inputs=files_of(read), params=spec)


def build_fig_flatness(given: Given, out: PathLike) -> dict[str, Any]:
    """Hessian trace (Hutchinson, 95% CI) and top-k eigenvalues (Lanczos) per optimizer."""
    spec, path = given.spec, given.evaluated()
    every = evaluated(given)  # read through the evaluation's recorded hash
    evals = [r for r in every if r.get("status", "ok") == "ok"]  # a diverged run: named below
    groups = report.group_by(evals, "optimizer")
    with new_figure(out, 1, 2, figsize=(9, 3.4), stand_ins=spec.get("stand_ins", [])) as f:
        axes = f.axes
        names = [key[0] for key in groups]
        for i, (name, items) in enumerate(zip(names, groups.values(), strict=True)):
            c = method_color(name)
            traces = [r["trace"] for r in items]
            lows = [r["trace"] - r["trace_ci_low"] for r in items]
            axes[0].errorbar([i] * len(traces), traces, yerr=lows, fmt="o", color=c, capsize=3)
            k = len([key for key in items[0] if key.startswith("lambda_")])
            lam = np.array([[r[f"lambda_{j + 1}"] for j in range(k)] for r in items])
            axes[1].plot(np.arange(1, k + 1), lam.mean(0), marker="o", color=c,
                         label=method_label(name))
        axes[0].set_xticks(range(len(names)), [method_label(n) for n in names])
        axes[0].set(ylabel="Hessian trace (Hutchinson)")
        axes[1].set(xlabel="eigenvalue index", ylabel="top Hessian eigenvalues (Lanczos)")
        axes[1].legend()
        f.title(spec["title"])
        n_ex = evals[0]["n_examples"] if evals else "?"
        n_seeds = len({r["seed"] for r in evals})
        over = f"mean over {n_seeds} seeds" if n_seeds > 1 else "one seed"
        caption = (f"{spec['title']}: flatness of the final models, Hessian of the mean "
                   f"cross-entropy on {n_ex} training images (eval mode); trace by Hutchinson "
                   f"(95% CI bars, one point per seed), top eigenvalues by Lanczos ({over}). "
                   + _lanczos_sentence(evals)
                   + f"Data used: {spec['data_used']}."
                   + "".join(f" Left out ({r['status']}): {r['run']}." for r in every
                             if r not in evals))
        f.add_rows(evals)
        return f.save(caption, inputs=[path], params=spec)


def _lanczos_sentence(rows: list[dict[str, Any]]) -> str:
    """The caption's account of the Lanczos check the evaluation recorded (if it did)."""
    checked = [r for r in rows if "lanczos_rel_error" in r]
    if not checked:
        return ""
    draws = sum(int(r.get("lanczos_draws", 1)) for r in checked)
    return (f"Lanczos checked against the dense Hessian of tiny models drawn from each seed: "
            f"largest relative error {max(r['lanczos_rel_error'] for r in checked):.1g} over "
            f"{draws} draws. ")


def _residual(rows: list[dict[str, Any]], suffix: str = "") -> list[float]:
    """|rise - <g, eps> - curvature| per probe (the terms beyond second order)."""
    return [abs(r[f"rise{suffix}"] - r[f"g_dot_eps{suffix}"] - r[f"curvature{suffix}"])
            for r in rows]


def run_columns(run: Run) -> dict[str, Any]:
    """The columns that join a figure's row to the run it comes from: ``run_id`` (the id of
    the run's provenance record) and the fingerprints of its draw (initial weights, data
    order) its record holds; the claims ledger counts a seed as independent only by these."""
    return {"run_id": run.record.get("id"),
            **{k: run.final.get(k) for k in FINGERPRINTS}}


def _signal_rows(run: Run) -> list[dict[str, Any]]:
    """A signal run's probe rows, read through the hash the run recorded."""
    return read_verified(run.folder / "signal.jsonl", read_jsonl, what="lesam fig_signal")


def build_fig_signal(given: Given, out: PathLike) -> dict[str, Any]:
    """The measured rise L(θ+ε) − L(θ), its first-order term ⟨g, ε⟩, its curvature term
    ½ εᵀHε and the residual (rise − both) along SAM and LE-SAM training; the residual also
    with BatchNorm in eval mode, to tell whether train-mode batch statistics cause it.

    The run of each optimizer whose folder is named by its label alone is drawn; the further
    seeds' runs (``<label>-s<seed>``) are in the CSV (the claims ledger's independent runs)."""
    spec, rows, notes = given.spec, [], []
    drawn = [r for r in given.runs if r.folder.name == r.label]
    seeds = list(dict.fromkeys([r.seed for r in drawn] + [r.seed for r in given.runs]))
    with new_figure(out, 1, len(drawn), figsize=(5 * len(drawn), 3.8), squeeze=False,
                    stand_ins=spec.get("stand_ins", [])) as f:
        for ax, run in zip(f.axes[0], drawn, strict=True):
            lab, sig = run.label, _signal_rows(run)
            record = train_record(run.final)  # the ledger's sanity check
            rows += [{"optimizer": lab, "seed": run.seed, **run_columns(run), **record, **r}
                     for r in sig]
            step = [r["step"] for r in sig]
            ax.plot(step, [abs(r["rise"]) for r in sig], color="k", lw=1.4,
                    label=r"measured rise $|L(\theta+\epsilon)-L(\theta)|$")
            ax.plot(step, [r["g_dot_eps"] for r in sig], color=method_color(lab),
                    label=r"first order $\langle g,\epsilon\rangle$")
            ax.plot(step, [abs(r["curvature"]) for r in sig], color="0.3", ls="--",
                    label=r"curvature $|\frac{1}{2}\epsilon^\top H\epsilon|$")
            res = _residual(sig)
            ax.plot(step, res, color="#d62728", lw=1.0, label="residual (train mode)")
            ev = [r for r in sig if r.get("rise_eval") is not None]
            if ev:
                ax.plot([r["step"] for r in ev], _residual(ev, "_eval"), color="#d62728",
                        ls=":", lw=1.0, label="residual, BatchNorm in eval mode")
            if any(r.get("sigma") is not None for r in sig):
                ax.plot(step, [r.get("sigma") or 0.0 for r in sig], color="k", lw=0.8,
                        ls=":", label=r"budget $\sigma_t$")
            ax.set_yscale("log")
            ax.set(title=method_label(lab), xlabel="step", ylabel="loss rise term")
            ax.legend(fontsize=6)
            curv = [abs(r["curvature"]) for r in sig]
            ratio = float(np.median([a / max(c, 1e-12) for a, c in zip(res, curv, strict=True)]))
            note = (f"{report.label(lab)}: median residual / curvature term = {ratio:.2g} in "
                    "train mode")
            if ev:
                ratio_ev = float(np.median([a / max(abs(r["curvature_eval"]), 1e-12) for a, r in
                                            zip(_residual(ev, "_eval"), ev, strict=True)]))
                note += f", {ratio_ev:.2g} in eval mode"
            notes.append(note)
        for run in given.runs:  # further seeds: in the CSV, not drawn
            if run not in drawn:
                rows += [{"optimizer": run.label, "seed": run.seed, **run_columns(run),
                          **train_record(run.final), **r} for r in _signal_rows(run)]
        f.title(spec["title"])
        caption = (f"{spec['title']}: the measured rise L(θ+ε) − L(θ) at probed steps, on the "
                   "training batch of that step, with its first-order term ⟨g, ε⟩, its "
                   "curvature term ½εᵀHε (exact Hessian-vector product, train mode as the "
                   "optimizer sees the net) and the residual rise − ⟨g, ε⟩ − ½εᵀHε (terms "
                   "beyond second order); dotted red: the same residual with BatchNorm in eval "
                   "mode (running statistics). Paper 002 claims SAM's rise is dominated by the "
                   "first-order term early, while LE-SAM's first-order term is fixed at σ_t and "
                   "the signal left is the curvature term; the residual shows how much of the "
                   "rise the curvature term does not explain. " + "; ".join(notes)
                   + (f"; drawn: seed {seeds[0]}, and the CSV holds seeds "
                      f"{', '.join(map(str, seeds))} (the claims ledger's independent runs)"
                      if len(seeds) > 1 else "")
                   + f". Data used: {spec['data_used']}.")
        f.add_rows(rows)
        inputs = [str(r.folder / "signal.jsonl") for r in given.runs] + files_of(given.runs)
        return f.save(caption, inputs=inputs, params=spec)


def _variant_name(variant: str) -> str:
    """Readable label of an ablation variant (``sigma_0.02`` -> ``σ = 0.02``)."""
    if variant.startswith("sigma_"):
        return f"σ = {variant.split('_', 1)[1]}"
    return {"no_rho_max": "no ρ_max clip", "no_anneal": "no σ annealing"}.get(variant, variant)


def build_fig_ablation(given: Given, out: PathLike) -> dict[str, Any]:
    """Final test accuracy of the LE-SAM variants (sigma sweep, rho_max off, no annealing)."""
    spec = given.spec
    rows, read = [], []
    blocks = [(spec["reference_group"], [spec["reference_label"]])] + [(spec["group"], None)]
    for group, labels in blocks:
        for lab, runs in by_label(given.runs, group, labels).items():
            finals = [r.final for r in runs]
            m, s, _ = report.mean_std([f["final_test_acc"] for f in finals])
            name = "LE-SAM (default)" if group == spec["reference_group"] else lab
            seeds = [r.seed for r in runs]
            read += runs
            rows.append({"variant": name, "mean_acc": m, "std_acc": s, "seeds": len(finals),
                         "status": ",".join(f["status"] for f in finals), "label": lab,
                         "per_seed": report.per_seed_text(zip(seeds, finals, strict=True)),
                         "per_seed_train": train_records_text(zip(seeds, finals, strict=True))})
    with new_figure(out, figsize=(6.5, 3.4), stand_ins=spec.get("stand_ins", [])) as f:
        ax = f.axes
        x = np.arange(len(rows))
        ax.bar(x, [r["mean_acc"] for r in rows],
               yerr=[r["std_acc"] or 0.0 for r in rows],
               color=[method_color("lesam") if i == 0 else "0.6" for i in range(len(rows))])
        ax.set_xticks(x, [_variant_name(r["variant"]) for r in rows], rotation=30, ha="right",
                      fontsize=8)
        ax.set_ylim(0, None)  # from zero: differences of a few points must not look large
        ax.set(ylabel="test accuracy (%)")
        f.title(spec["title"])
        counts = sorted({r["seeds"] for r in rows})
        bars = ("mean over seeds, error bar = sample std where a row has 2 or more seeds"
                if counts and counts[-1] > 1 else "one seed per bar (no error bar)")
        caption = (f"{spec['title']}: LE-SAM with its default settings and with one change "
                   f"each (σ sweep, no ρ_max clip, no σ annealing); {bars}; seeds per bar: "
                   + ", ".join(f"{_variant_name(r['variant'])} {r['seeds']}" for r in rows)
                   + f". Data used: {spec['data_used']}. "
                   + read_sentence(read))
        f.add_rows(rows)
        return f.save(caption, inputs=files_of(read), params=spec)


FIGURES = {"fig_dynamics": build_fig_dynamics, "fig_flatness": build_fig_flatness,
           "fig_signal": build_fig_signal, "fig_ablation": build_fig_ablation}
