"""A request's model inputs, made from its chat text and its picture's bytes: the picture
decoded (PNG only) and the model's own processor applied, exactly as
``processor(text=[text], images=[picture], return_tensors="pt")`` makes them for that
request alone. Synchronous; run beside ``generate``, in threads of the model's process
(:class:`Preparer`) or in worker processes of their own (:class:`PreparePool`).

Three things make it cheaper than one processor call per request, with the same tensors:

- the pictures of requests that arrived together go through the image processor in one
  call (about half the CPU per picture of one call each), split back per request;
- the text side (the chat text with its image placeholder expanded, tokenised: input ids,
  attention mask, token types) depends on the text and on the picture's layout (its patch
  grid), never on its pixels. The prompts of a template are few (a GO19 port's differ by
  the side to move), so it is made once per (text, layout) by the processor itself and
  kept: the image processor alone then runs for every later request;
- a torchvision image processor gets each picture as the channel-first uint8 tensor it
  would make of the PIL picture itself (:func:`picture_planes`): made from the decoded
  picture's bands, it costs a third of the processor's own conversion, which is about
  half of its time on a 512 px board.

Why processes: the picture's decoding and the image processor are pure CPU work (2-4 ms of
a 512 px board on the tiny model's processor), and in a thread of the model's process they
hold the GIL that the model's ``generate`` needs between its kernels; in a worker process
of their own they run on another core meanwhile. A worker loads the processor from the
model's folder once (:func:`~orchestrator.serve.hf.loading.load_processor`, as the model's
process does), gets PNG bytes and text, and sends numpy arrays back (the tensors' bytes,
copied once each way).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from orchestrator.serve.hf.jobs import RequestError
from orchestrator.untrusted import BadPicture, open_png

MAX_PICTURE_PIXELS = 4096 * 4096  # a larger picture is refused before it is decoded
TEXT_CACHE = 4096  # (text, layout) pairs whose text side is kept
PIXELS = "pixel_values"

Item = tuple[str, bytes | None]  # a request's chat text and its picture's bytes
Inputs = dict[str, torch.Tensor]
Picture = Image.Image | torch.Tensor  # as the image processor takes it (picture_planes)


def decode_picture(data: bytes | None) -> Image.Image | None:
    """The request's picture, from a client on either port: PNG only (no other decoder
    of Pillow's ever sees the bytes; its EPS one starts Ghostscript), within the pixels
    served."""
    if data is None:
        return None
    try:
        return open_png(data, MAX_PICTURE_PIXELS).convert("RGB")
    except BadPicture as exc:
        raise RequestError(f"the picture cannot be decoded: {exc}") from None


def picture_planes(picture: Image.Image) -> torch.Tensor:
    """An RGB picture as a ``(3, height, width)`` uint8 tensor: the pixels a torchvision
    image processor makes of the PIL picture, one band after another."""
    return torch.from_numpy(np.stack([np.asarray(band) for band in picture.split()]))


class Preparer:
    """Inputs per request from ``processor`` (thread-safe: the text cache is a dict whose
    worst race makes one entry twice)."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self._as_planes = _takes_tensors(getattr(processor, "image_processor", None))
        # Channel-first stated, not inferred: a picture 3 pixels wide would read as
        # channel-last.
        self._picture_kwargs = {"input_data_format": "channels_first"} if self._as_planes \
            else {}
        self._texts: dict[tuple, dict[str, torch.Tensor]] = {}
        self.text_hits = 0
        self.text_misses = 0

    def make(self, items: Sequence[Item]) -> list[Inputs | RequestError]:
        """Each item's inputs, or the RequestError that is its answer instead."""
        out: list[Inputs | RequestError | None] = [None] * len(items)
        pictures: list[tuple[int, Picture]] = []
        for i, (_, data) in enumerate(items):
            try:
                decoded = decode_picture(data)
            except RequestError as exc:
                out[i] = exc
                continue
            if decoded is None:
                out[i] = self._text_only(items[i][0])
            else:
                pictures.append((i, picture_planes(decoded) if self._as_planes else decoded))
        images = self._images([picture for _, picture in pictures]) if pictures else None
        for k, (i, picture) in enumerate(pictures):
            text = items[i][0]
            if images is None:  # a layout this split does not know: each alone, uncached
                out[i] = self._whole(text, picture)
                continue
            own = images[k]
            key = (text, _layout(own))
            cached = self._texts.get(key)
            if cached is None:
                whole = self._whole(text, picture)
                if isinstance(whole, RequestError):
                    out[i] = whole
                    continue
                cached = {name: value for name, value in whole.items() if name not in own}
                self._keep(key, cached)
                self.text_misses += 1
            else:
                self.text_hits += 1
            out[i] = {**cached, **own}
        assert all(result is not None for result in out)
        return out  # type: ignore[return-value]

    def _keep(self, key: tuple, value: dict[str, torch.Tensor]) -> None:
        if len(self._texts) >= TEXT_CACHE:
            self._texts.clear()
        self._texts[key] = value

    def _text_only(self, text: str) -> Inputs | RequestError:
        key = (text, None)
        cached = self._texts.get(key)
        if cached is not None:
            self.text_hits += 1
            return dict(cached)
        made = self._whole(text, None)
        if not isinstance(made, RequestError):
            self._keep(key, made)
            self.text_misses += 1
            return dict(made)
        return made

    def _whole(self, text: str, picture: Picture | None) -> Inputs | RequestError:
        """The processor's whole output for one request."""
        kwargs = self._picture_kwargs if picture is not None else {}
        try:
            return dict(self.processor(text=[text], images=picture, return_tensors="pt",
                                       **kwargs))
        except Exception as exc:  # the processor's own refusal of this request's content
            return RequestError(f"the processor refuses this request: {exc}")

    def _images(self, pictures: list[Picture]) -> list[Inputs] | None:
        """The image processor's output for each picture, from one call; None when the
        call fails (then each request is made alone, to find whose content it is) or its
        layout is not one this split knows."""
        try:
            batch = dict(self.processor(images=pictures, return_tensors="pt",
                                        **self._picture_kwargs))
        except Exception:
            return None
        return split_images(batch, len(pictures))


def _takes_tensors(image_processor: Any) -> bool:
    """Whether ``image_processor`` works on torch tensors itself (transformers' torchvision
    backend): a PIL one would turn a tensor back into a picture."""
    try:
        from transformers.image_processing_backends import TorchvisionBackend
    except ImportError:  # a transformers without backends: pictures as PIL images
        return False
    return isinstance(image_processor, TorchvisionBackend)


def _layout(inputs: Inputs) -> tuple:
    """What of a picture's processed form the text side may depend on: everything but its
    pixels (the Qwen-VL processors' ``image_grid_thw``, the count of its placeholders)."""
    return tuple((name, tuple(value.shape), tuple(value.flatten().tolist()))
                 for name, value in sorted(inputs.items()) if name != PIXELS)


def split_images(batch: dict[str, Any], count: int) -> list[Inputs] | None:
    """An image processor's output for ``count`` pictures back into one per picture, as
    it makes it for that picture alone: per-image tensors (first dimension ``count``) one
    row each, and ``pixel_values`` by the Qwen-VL layout (the images' patches one after
    another, as many as ``image_grid_thw``'s t*h*w per image). None for any other layout."""
    grid = batch.get("image_grid_thw")
    out: list[Inputs] = [{} for _ in range(count)]
    for name, value in batch.items():
        if not isinstance(value, torch.Tensor):
            return None
        if name == PIXELS and isinstance(grid, torch.Tensor) and len(grid) == count \
                and value.shape[0] == int(grid.prod(dim=1).sum()):
            for k, part in enumerate(torch.split(value, grid.prod(dim=1).tolist())):
                out[k][name] = part
        elif name != PIXELS and value.dim() >= 1 and value.shape[0] == count:
            for k in range(count):
                out[k][name] = value[k:k + 1]
        else:
            return None
    return out


# -- worker processes -----------------------------------------------------------------

_WORKER: Preparer | None = None


def _start_worker(model_dir: str) -> None:
    """A worker's start: the processor loaded once; Ctrl-C is the server's to handle (it
    reaches the whole process group), and the model's process shuts the pool down."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)  # one core per worker: the pool's size is the parallelism
    from orchestrator.serve.hf.loading import load_processor

    _WORKER = Preparer(load_processor(Path(model_dir)))


def _worker_ready() -> int:
    return os.getpid()


def _worker_make(items: Sequence[Item]) -> list[dict[str, np.ndarray] | str]:
    """:meth:`Preparer.make` in a worker: tensors as numpy arrays, errors as their text."""
    assert _WORKER is not None
    return [str(made) if isinstance(made, RequestError)
            else {name: value.numpy() for name, value in made.items()}
            for made in _WORKER.make(items)]


class PreparePool:
    """:meth:`Preparer.make` in ``workers`` processes of their own (started by ``spawn``:
    no copy of the model's process, its threads or its model). A pool whose worker died
    (killed, out of memory) answers that call's requests with an error and is started
    again for the next."""

    def __init__(self, model_dir: Path, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"a prepare pool needs at least one worker, not {workers}")
        self.model_dir = model_dir
        self.workers = workers
        self._lock = threading.Lock()
        self._pool = self._start()
        # A worker starts on a task: one each now, so that they load the processor while
        # the model's process loads the model.
        self._ready = [self._pool.submit(_worker_ready) for _ in range(workers)]

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"),
                                   initializer=_start_worker,
                                   initargs=(str(self.model_dir),))

    def wait_ready(self) -> None:
        """Return once the workers have loaded the processor; a worker that cannot load
        it raises here."""
        for future in self._ready:
            future.result()

    def make(self, items: Sequence[Item]) -> list[Inputs | RequestError]:
        pool = self._pool
        try:
            made = pool.submit(_worker_make, list(items)).result()
        except BrokenExecutor as exc:
            with self._lock:
                if self._pool is pool:
                    self._pool = self._start()
            return [RequestError(f"preparing the request failed: a prepare worker stopped "
                                 f"({exc})")] * len(items)
        return [RequestError(value) if isinstance(value, str)
                else {name: torch.from_numpy(array) for name, array in value.items()}
                for value in made]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
