"""The model and its adapters, loaded once, and the checks that come before any port opens.

Everything is a local folder (``local_files_only``): nothing is fetched from a hub. A
folder that is missing, a config transformers cannot read, an adapter that is not a LoRA
adapter or that does not fit this model is a :class:`LoadError`, one line naming the
folder. An adapter "fits" when peft finds its target modules with the right shapes *and*
every tensor of its file lands in the model: peft itself only warns about weights left
behind (missing keys) and says nothing of extra ones, so both are checked here, by count
(the file's tensors against the adapter's state dict in the model) and by value (a lora_B
left at its zero init is a module the file did not fill).

Each adapter is classed as *mixable* or not: one whose LoRA modules all lie in the
language model (the decoder and ``lm_head``, as LLaMA-Factory trains them by default and
vLLM serves them) can share a ``generate`` call with other adapters, row by row; one that
touches the vision tower or the projector, or uses modules_to_save or DoRA, gets calls of
its own (see :mod:`.generation`).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from peft import PeftConfig, PeftModel, get_peft_model_state_dict
from peft.tuners.lora import LoraLayer
from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

from orchestrator.serve.hf.jobs import BASE

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class LoadError(Exception):
    """The model or an adapter cannot be served; ``str()`` is one line naming the folder."""


@dataclass(frozen=True)
class AdapterInfo:
    name: str
    path: Path
    rank: int
    targets: str  # the target modules as the adapter's config names them
    mixable: bool  # may share a generate call with other adapters (language model only)
    why_not_mixable: str = ""


@dataclass
class Loaded:
    model: Any  # a PeftModel when adapters are loaded, else the transformers model
    processor: Any
    adapters: dict[str, AdapterInfo]
    device: torch.device
    dtype: torch.dtype
    # Every LoRA layer, and whether it lies in the language model (rows are requests there).
    lora_layers: list[tuple[torch.nn.Module, bool]]
    eos_ids: tuple[int, ...]
    pad_id: int

    @property
    def names(self) -> list[str]:
        return [BASE, *self.adapters]


@dataclass(frozen=True)
class Description:
    """What was loaded (here or in the model's own process), for the server's start lines."""

    device: str
    dtype: str
    model_type: str
    parameters: int
    adapters: dict[str, AdapterInfo]


def describe(loaded: Loaded) -> Description:
    inner = loaded.model.get_base_model() if loaded.adapters else loaded.model
    # the model's own size: the adapters' LoRA weights now live inside its modules
    own = sum(p.numel() for name, p in inner.named_parameters() if not _is_lora(name))
    return Description(str(loaded.device), str(loaded.dtype).removeprefix("torch."),
                       type(inner).__name__, own, dict(loaded.adapters))


def resolve_device(spec: str) -> torch.device:
    """``auto`` is the first CUDA device when torch sees one, else the CPU."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise LoadError(f"--device {spec}: expected auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise LoadError(f"--device {spec}: torch {torch.__version__} ({build}) sees no "
                            "CUDA device")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise LoadError(f"--device {spec}: there are {torch.cuda.device_count()} CUDA "
                            "devices")
    elif device.type != "cpu":
        raise LoadError(f"--device {spec}: expected auto, cpu, cuda or cuda:N")
    return device


def check_before_loading(model_dir: Path, adapters: dict[str, Path],
                         device_spec: str) -> torch.device:
    """What can be refused in a moment (the device, the folders): before the prepare
    workers are spawned and the model is read, so that a refusal is not a wait."""
    device = resolve_device(device_spec)
    if not model_dir.is_dir():
        raise LoadError(f"--model {model_dir}: no such folder")
    for name, path in adapters.items():
        if not path.is_dir():
            raise LoadError(f"--adapter {name}={path}: no such folder")
    return device


def resolve_dtype(spec: str, device: torch.device) -> torch.dtype:
    """``auto``: bfloat16 on a GPU that has it (float16 on one that has not), float32 on
    the CPU, where half precision is slower, not faster."""
    if spec != "auto":
        return DTYPES[spec]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def _first_line(exc: BaseException) -> str:
    """The line of a library's message that says what is wrong (torch's state-dict errors
    open with a heading line, then one line per mismatch)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    telling = [line for line in lines if line.startswith("size mismatch")]
    return ((telling or lines or [type(exc).__name__])[0])[:300]


def load(model_dir: Path, adapters: dict[str, Path], device_spec: str = "auto",
         dtype_spec: str = "auto") -> Loaded:
    """The model in ``model_dir`` with every adapter beside it, in eval mode on its device."""
    device = check_before_loading(model_dir, adapters, device_spec)
    dtype = resolve_dtype(dtype_spec, device)
    transformers.utils.logging.disable_progress_bar()  # one line per fact, no bars
    transformers.utils.logging.set_verbosity_error()
    try:
        AutoConfig.from_pretrained(model_dir, local_files_only=True)
        processor = load_processor(model_dir)
        model = AutoModelForImageTextToText.from_pretrained(
            model_dir, local_files_only=True, dtype=dtype, device_map={"": str(device)})
    except Exception as exc:  # transformers raises many kinds; the folder is the culprit
        raise LoadError(f"--model {model_dir}: transformers cannot load it: "
                        f"{_first_line(exc)}") from None
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is None or not hasattr(processor, "image_processor"):
        raise LoadError(f"--model {model_dir}: its processor has no tokenizer and image "
                        "processor: not a vision-language model")
    configs = {name: _adapter_config(name, path) for name, path in adapters.items()}
    with warnings.catch_warnings():
        # The libraries' deprecation notes are for their callers' authors, not for the user.
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message="Setting `save_embedding_layers`")
        # peft looks for the adapter's base model folder to compare vocabularies: the base
        # is --model here, wherever the adapter was trained.
        warnings.filterwarnings("ignore", message="Could not find a config file in")
        for name, path in adapters.items():
            model = _add_adapter(model, model_dir, name, path, configs[name])
    model.eval()
    eos_ids, pad_id = _stop_tokens(model, tokenizer)
    layers = _lora_layers(model)
    infos = {name: _info(name, path, configs[name], layers) for name, path in adapters.items()}
    return Loaded(model, processor, infos, device, dtype, layers, eos_ids, pad_id)


def load_processor(model_dir: Path) -> Any:
    """The model's processor, as the server uses it: in the model's process and in every
    prepare worker (:mod:`.preparing`), so that both make the same inputs."""
    processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is not None:
        tokenizer.padding_side = "left"  # generation continues every row at the same column
    return processor


def _adapter_config(name: str, path: Path) -> Any:
    try:
        config = PeftConfig.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:
        raise LoadError(f"--adapter {name}={path}: not a peft adapter folder "
                        f"(adapter_config.json): {_first_line(exc)}") from None
    if str(config.peft_type).rsplit(".", 1)[-1] != "LORA":
        raise LoadError(f"--adapter {name}={path}: a {config.peft_type} adapter; only LoRA "
                        "adapters are served")
    return config


def _add_adapter(model: Any, model_dir: Path, name: str, path: Path, config: Any) -> Any:
    trained_on = config.base_model_name_or_path or "an unnamed model"
    unfit = f"--adapter {name}={path}: does not fit {model_dir} (trained on {trained_on})"
    try:
        with warnings.catch_warnings():
            # peft picks an adapter's keys out of the model's by its name as a substring,
            # so a short name ("a", "b") matches every key path and a whole adapter is
            # reported missing though it loaded; the counts below are go19's own check.
            warnings.filterwarnings("ignore", message=r".*Found (missing|unexpected) adapter "
                                                      "keys")
            if isinstance(model, PeftModel):
                model.load_adapter(str(path), adapter_name=name, local_files_only=True)
            else:
                model = PeftModel.from_pretrained(model, str(path), adapter_name=name,
                                                  local_files_only=True)
    except Exception as exc:  # size mismatch, target modules not found, unreadable weights
        raise LoadError(f"{unfit}: {_first_line(exc)}") from None
    in_file = _tensors_in_file(path)
    # Counted, not compared by name: peft maps the keys of adapters saved under older
    # module names onto the model's. Counted as peft saves it by default: with the
    # embedding layers (lm_head's base weight too) when the adapter targets one.
    if in_file is not None:
        in_model = list(get_peft_model_state_dict(model, adapter_name=name))
        if len(in_file) > len(in_model):
            raise LoadError(f"{unfit}: {len(in_file) - len(in_model)} of its {len(in_file)} "
                            "tensors match no module of this model")
        lora_in_file = sum(map(_is_lora, in_file))
        lora_in_model = sum(map(_is_lora, in_model))
        if lora_in_file < lora_in_model:
            # a module left with its random lora_A would answer as no trained adapter does
            raise LoadError(f"{unfit}: its file has {lora_in_file} of the {lora_in_model} "
                            "LoRA tensors of the modules it targets")
    empty = [module for module in model.modules() if isinstance(module, LoraLayer)
             and name in module.lora_B and _untrained(module, name)]
    if empty:
        raise LoadError(f"{unfit}: its file has no weights for {len(empty)} of the modules "
                        "it targets")
    return model


def _untrained(layer: LoraLayer, name: str) -> bool:
    """lora_B still at its zero init: no weight of the file reached this module."""
    weight = layer.lora_B[name].weight
    return isinstance(weight, torch.Tensor) and not bool(weight.any())


def _tensors_in_file(path: Path) -> list[str] | None:
    weights = path / "adapter_model.safetensors"
    if not weights.is_file():
        return None  # a .bin adapter: peft loaded it; its tensors are not counted here
    with open(weights, "rb") as fh:
        header_len = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(header_len))
    return [key for key in header if key != "__metadata__"]


def _is_lora(key: str) -> bool:
    """A LoRA tensor's key (lora_A, lora_B, their embedding forms, DoRA's magnitude), not
    a base weight saved beside them."""
    return ".lora_" in key


def _lora_layers(model: Any) -> list[tuple[torch.nn.Module, bool]]:
    if not isinstance(model, PeftModel):
        return []
    inner: Any = model.get_base_model()
    language = {id(m) for m in inner.get_decoder().modules()}
    head = inner.get_output_embeddings()
    if head is not None:
        language |= {id(m) for m in head.modules()}
    return [(m, id(m) in language) for m in model.modules() if isinstance(m, LoraLayer)]


def _info(name: str, path: Path, config: Any,
          layers: list[tuple[torch.nn.Module, bool]]) -> AdapterInfo:
    targets = config.target_modules
    shown = targets if isinstance(targets, str) else ",".join(sorted(targets or ()))
    outside = sum(1 for layer, in_language in layers
                  if not in_language and name in getattr(layer, "lora_A", {}))
    reason = ""
    if outside:
        reason = f"{outside} of its LoRA modules are outside the language model"
    elif config.modules_to_save:
        reason = "it has modules_to_save"
    elif getattr(config, "use_dora", False):
        reason = "it is a DoRA adapter"
    return AdapterInfo(name, path, int(config.r), shown, not reason, reason)


def _stop_tokens(model: Any, tokenizer: Any) -> tuple[tuple[int, ...], int]:
    """The ids that end an answer (the generation config's, and the tokenizer's own) and
    the id that pads finished rows."""
    configured = model.generation_config.eos_token_id
    ids = [configured] if isinstance(configured, int) else list(configured or ())
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    if not ids:
        raise LoadError("the model names no end-of-answer token (generation_config "
                        "eos_token_id, tokenizer eos_token)")
    pad = model.generation_config.pad_token_id
    if pad is None:
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else ids[0]
    return tuple(ids), int(pad)
