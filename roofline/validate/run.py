"""`validate`: check the arguments, choose the profile (`profile_choice`), run the model live
(`roofline.measure.live_runs`), predict the same steps (`roofline.model.step`) and put them side by side
(`results`; `document` is the JSON). The profile defaults to this machine's: calibrated ceilings when
`roofline calibrate` has run here, else the detected datasheet estimate, and the output says which, because a
validation against uncalibrated ceilings tests the datasheet, not the cost model.

torch is imported inside functions only: importing this module stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from roofline.measure.live_model import required_input_shape, required_model
from roofline.measure.live_runs import MIN_TIMED_REPEATS, LiveRuns, checked_device, run_live
from roofline.validate.profile_choice import ProfileChoice, choose_profile
from roofline.validate.results import Run, Validation
from roofline.workload.request import ModelRequest, is_user_module


def _check_request(req: ModelRequest, precision_name: str) -> None:
    """Raise on a model or precision that does not exist, before anything slow: a zoo name is looked up
    without torch; a module:attr reference is imported and needs its --input-shape."""
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder
    from roofline.workload.trace import import_reference

    model = required_model(req)
    get_precision(precision_name)
    workload_builder(req)
    if is_user_module(model):
        required_input_shape(req)
        import_reference(model)


def compare(req: ModelRequest, live: LiveRuns, choice: ProfileChoice, heap_kept: bool | None = None) -> Validation:
    """Each live batch beside the prediction of `choice`'s profile for it: the comparing half of `validate`.
    `heap_kept`: whether the process that ran `live` kept its C heap (None: this process's environment says,
    the live runs having happened here)."""
    from roofline.model.cpu_runtime.heap_setting import keeps_heap
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder

    _, build = workload_builder(req)
    kept = keeps_heap(os.environ) if heap_kept is None else heap_kept
    options = StepOptions(train=live.train, optimizer=live.optimizer, heap_kept=kept)
    warnings = list(choice.warnings)
    runs = []
    for batch in live.batches:
        workload = build(batch.batch_size)
        if workload.unsupported:
            warnings.append(f"batch {batch.batch_size}: ops with no formula, predicted as zero time: "
                            + ", ".join(f"{k} x{v}" for k, v in workload.unsupported.items()))
        prediction = predict_step(workload, choice.profile, get_precision(live.precision), options)
        runs.append(Run(batch.batch_size, prediction, batch.measurement, batch.kinds, batch.layers,
                        batch.fresh_page_bytes))
    return Validation(live.model, live.device, live.precision, live.train, live.optimizer, live.environment, choice,
                      runs, warnings + live.warnings)


def validate(req: ModelRequest, device_name: str, batches: list[int], precision_name: str = "fp32",
             train: bool = False, optimizer: str = "sgd", hw: str | None = None, budget_s: float = 2.0,
             repeats: int = MIN_TIMED_REPEATS, kind_steps: int = 2, per_layer: bool = False,
             on_batch: Callable[[int], None] = lambda _: None, calibrate: bool = True) -> Validation:
    """Predict and run `req` at each batch size on `device_name` ('cpu' or 'cuda'). Every argument is checked
    before anything slow happens (a calibration takes tens of seconds and writes into the user's cache)."""
    _check_request(req, precision_name)
    checked_device(device_name, repeats, budget_s, kind_steps)
    choice = choose_profile(device_name, hw, calibrate)
    live = run_live(req, device_name, batches, precision_name, train, optimizer, budget_s, repeats, kind_steps,
                    per_layer, on_batch)
    return compare(req, live, choice)
