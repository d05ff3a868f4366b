"""A LoRA adapter trained with TRL's ``SFTTrainer`` on a ``go19 dataset export`` (the SFT
parquet, taken as it is: TRL reads its ``messages``/``images`` columns), for
``go19 train-lora`` and ``make demo-vlm``.

LoRA goes on the language model's projections only (the vision tower stays as it is), the
adapter that ``go19 serve --engine hf --adapter NAME=DIR`` and vLLM's ``--lora-modules``
load. CPU by default and a fixed thread count: a 2-core machine trains the tiny model
(``go19 tiny-model``) a few hundred steps in about a minute. Needs the vlm extra and trl.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.serve.hf.tiny import LANGUAGE_PROJECTIONS


@dataclass(frozen=True, slots=True)
class LoraRun:
    """How one adapter is trained."""

    model: Path  # the base model's folder
    export: Path  # a `go19 dataset export` folder (data/*.parquet)
    out: Path  # the adapter's folder (replaced)
    steps: int = 100
    batch: int = 4
    learning_rate: float = 5e-3  # a random tiny model needs a large one to learn in minutes
    rank: int = 8
    seed: int = 0
    threads: int = 2
    every: int = 10  # a progress line every this many steps


@dataclass(frozen=True, slots=True)
class LoraResult:
    samples: int
    steps: int
    loss: float  # the mean training loss
    seconds: float


def load_export(folder: Path) -> Any:
    """The export's samples as a ``datasets.Dataset``; ValueError when it holds none."""
    import datasets

    datasets.disable_progress_bars()  # the step lines say how it goes: no bars between them
    files = sorted(str(p) for p in (folder / "data").glob("*.parquet"))
    if not files:
        raise ValueError(f"{folder}: no data/*.parquet (not a `go19 dataset export` folder)")
    return datasets.load_dataset("parquet", data_files=files, split="train")


def train(run: LoraRun, say: Callable[[str], None] = print) -> LoraResult:
    """Train one adapter as ``run`` says and save it in ``run.out``; ``say`` gets a line
    every ``run.every`` steps (step, loss, seconds)."""
    import torch
    import transformers
    from peft import LoraConfig
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(run.threads)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    start = time.monotonic()
    samples = load_export(run.export)

    class Progress(transformers.TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kwargs: Any) -> None:
            if logs and "loss" in logs:
                say(f"  step {state.global_step}/{state.max_steps}: loss {logs['loss']:.3f} "
                    f"({time.monotonic() - start:.0f} s)")

    with warnings.catch_warnings():
        # TRL's use of arguments transformers deprecates: a note for TRL, not for the user.
        warnings.simplefilter("ignore", FutureWarning)
        trainer = SFTTrainer(
            model=AutoModelForImageTextToText.from_pretrained(run.model, local_files_only=True),
            processing_class=AutoProcessor.from_pretrained(run.model, local_files_only=True),
            train_dataset=samples,
            peft_config=LoraConfig(r=run.rank, lora_alpha=2 * run.rank,
                                   target_modules=LANGUAGE_PROJECTIONS),
            args=SFTConfig(output_dir=str(run.out), max_steps=run.steps,
                           per_device_train_batch_size=run.batch,
                           learning_rate=run.learning_rate, seed=run.seed, use_cpu=True,
                           report_to=[], save_strategy="no", logging_steps=run.every,
                           disable_tqdm=True),
            callbacks=[Progress()],
        )
        trainer.remove_callback(transformers.PrinterCallback)  # its dicts repeat the step lines
        result = trainer.train()
    trainer.save_model(str(run.out))  # the adapter alone (a peft model saves its own)
    loss = float(result.training_loss)
    if not math.isfinite(loss):
        raise ValueError(f"training diverged (loss {loss})")
    return LoraResult(len(samples), result.global_step, loss, time.monotonic() - start)
