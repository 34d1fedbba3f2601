"""The engine's two loops over a :class:`~sharpness.train.run.Run`: epochs of mini-batches, and
full-batch gradient descent until a loss goal, divergence or a step budget."""

from __future__ import annotations

import time
from typing import Any

from sharpness.runs.progress import Progress
from sharpness.runs.state import progressed
from sharpness.train import distributed as ddp
from sharpness.train.closure import Stop
from sharpness.train.hooks import StepInfo
from sharpness.train.run import Run


def run_minibatch(run: Run) -> None:
    """Epochs of shuffled mini-batches; an epoch row (and optional step rows) each."""
    cfg = run.cfg
    bar = _progress(run, cfg["epochs"], run.epoch, "epoch")
    while run.epoch < cfg["epochs"] and run.stop is None:
        t0 = time.perf_counter()
        run.model.train()
        loss_sum, correct, seen, counted = 0.0, 0, 0, 0
        diag_sum: dict[str, float] = {}
        lr = cfg["lr"]
        for x, y in run.batches.epoch():  # this process's piece of each global batch
            lr = run.set_lr()
            probed = run.probe_before(x, y, lr)
            closure = run.closure(x, y, goal=False)
            try:
                loss = float(run.opt.step(closure))
            except Stop as stop:
                run.diverged(stop)
                break
            run.stepped(closure)
            if probed is not None:
                run.probe_after(*probed)
            out = closure.clean_outputs
            loss_sum += loss * len(y)
            if out is not None:  # a custom closure has none (no train accuracy)
                correct += int((out.argmax(1) == y).sum())
                counted += len(y)
            seen += len(y)
            for k, v in run.opt.diagnostics.items():
                diag_sum[k] = diag_sum.get(k, 0.0) + float(v)
            run.step += 1
            progressed()  # the run's heartbeat comes from this loop (sharpness.runs.state)
            if bar is not None:  # a line inside a long epoch, at most every few seconds
                bar.note(f"step {run.step}/{run.total_steps}",
                         at=run.step / run.steps_per_epoch, loss=loss)
            if cfg["log_every"] and run.step % cfg["log_every"] == 0:
                run.write_row({"kind": "step", "epoch": run.epoch, "step": run.step,
                                "lr": lr, "loss": loss,
                                **{f"opt_{k}": float(v)
                                   for k, v in run.opt.diagnostics.items()}})
            if run.hooks.on_step_end is not None:
                run.hooks.on_step_end(StepInfo(run.step, run.epoch, loss,
                                                dict(run.opt.diagnostics)))
        if run.stop is not None:
            break
        loss_sum, correct, seen, counted = ddp.sum_over_ranks(
            run.dist, [loss_sum, correct, seen, counted], run.device)
        run.epoch += 1
        row: dict[str, Any] = {"kind": "epoch", "epoch": run.epoch, "step": run.step,
                               "lr": lr, "train_loss": loss_sum / max(seen, 1),
                               "train_acc": correct / counted if counted else None}
        row.update({f"opt_{k}": v / run.steps_per_epoch for k, v in diag_sum.items()})
        last = run.epoch == cfg["epochs"]
        if cfg["eval_every"] and (run.epoch % cfg["eval_every"] == 0 or last):
            row["test_loss"], row["test_acc"] = run.evaluate(run.data.x_test,
                                                              run.data.y_test)
        if cfg["sharpness_every"] and (run.epoch % cfg["sharpness_every"] == 0 or last):
            run.sharpness(row)
        run.extra_metrics(row)
        if run.hooks.on_epoch_end is not None:
            run.hooks.on_epoch_end(run, row)
        run.write_row(row)
        run.write_timing({"epoch": run.epoch, "step": run.step,
                           "seconds": time.perf_counter() - t0,
                           "steps": run.steps_per_epoch})
        if bar is not None:
            bar.update(run.epoch, **{k: row[k] for k in PROGRESS_FIELDS if k in row})
        if cfg["checkpoint_every"] and run.epoch % cfg["checkpoint_every"] == 0:
            run.save_checkpoint()
    if bar is not None:
        bar.close()
    if run.stop is None:
        run.stop = {"status": "ok", "reason": "completed"}


# full-batch ----------------------------------------------------------------------------
def run_fullbatch(run: Run) -> None:
    """GD on the whole train set until the loss goal, divergence or ``max_steps``."""
    cfg = run.cfg
    x, y = run.data.x_train, run.data.y_train
    bar = _progress(run, cfg["max_steps"], run.step, "step")
    run.model.train()
    while run.stop is None:
        t0 = time.perf_counter()
        t = run.step
        row: dict[str, Any] = {"kind": "step", "step": t}
        log = bool(cfg["log_every"]) and t % cfg["log_every"] == 0
        if cfg["sharpness_every"] and t % cfg["sharpness_every"] == 0:
            run.sharpness(row)
            log = True
        if t >= cfg["max_steps"]:
            run.stop = {"status": "ok", "reason": "max_steps"}
            if log:
                row["train_loss"], row["train_acc"] = run.evaluate(x, y)
                run.extra_metrics(row)
                run.write_row(row)
            break
        lr = run.set_lr()
        closure = run.closure(x, y, goal=True)
        try:
            loss = float(run.opt.step(closure))
        except Stop as stop:
            if stop.reason == "diverged":
                run.diverged(stop)
            else:
                run.stop = {"status": "ok", "reason": "loss_goal"}
                row.update(lr=lr, train_loss=stop.loss, stop="loss_goal")
                out = closure.clean_outputs
                if out is not None:
                    row["train_acc"] = float((out.argmax(1) == y).float().mean())
                run.extra_metrics(row)
                run.write_row(row)
            break
        run.stepped(closure)
        out = closure.clean_outputs
        run.step += 1
        progressed()  # the run's heartbeat comes from this loop (sharpness.runs.state)
        if log:
            row.update(lr=lr, train_loss=loss,
                       train_acc=float((out.argmax(1) == y).float().mean())
                       if out is not None else None,
                       **{f"opt_{k}": float(v) for k, v in run.opt.diagnostics.items()})
            if cfg["eval_every"] and t % cfg["eval_every"] == 0:
                row["test_loss"], row["test_acc"] = run.evaluate(run.data.x_test,
                                                                  run.data.y_test)
                run.model.train()
            run.extra_metrics(row)
            run.write_row(row)
            run.write_timing({"step": t, "seconds": time.perf_counter() - t0})
        if run.hooks.on_step_end is not None:
            run.hooks.on_step_end(StepInfo(run.step, 0, loss, dict(run.opt.diagnostics)))
        if bar is not None:
            bar.update(run.step, loss=loss, **{k: row[k] for k in ("train_acc", "sharpness")
                                               if k in row})
        if cfg["checkpoint_every"] and run.step % cfg["checkpoint_every"] == 0:
            run.save_checkpoint()
    if bar is not None:
        bar.close()


#: the row fields a progress line shows (when the row has them)
PROGRESS_FIELDS = ("train_loss", "train_acc", "test_acc", "sharpness")


def _progress(run: Run, total: int, initial: int, unit: str) -> Progress | None:
    """The run's progress (:class:`sharpness.runs.progress.Progress`: a bar on a terminal, lines in
    a log), on the process that owns the files, when the run asked for it."""
    if not (run.progress and run.dist.is_main):
        return None
    return Progress(total, unit, desc=f"train {run.dir}", initial=initial)
