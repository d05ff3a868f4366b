"""`go19 serve --engine hf`: a transformers VLM and its LoRA adapters (peft), answering
GO19 ports (one adapter each) and an OpenAI-compatible port from one batch queue; the
model in a process of its own by default. The optional `vlm` extra; nothing here is
imported by go19's other commands.

Modules, one job each: :mod:`.jobs` (what a request asks, plain values),
:mod:`.loading` (the model and adapters, and the checks before any port opens),
:mod:`.decoding` (per-row constraints and sampling inside ``generate``),
:mod:`.preparing` (a request's inputs, in worker processes), :mod:`.generation` (one
batch through ``generate``), :mod:`.model_process` (the model in a process of its own,
batches over a pipe), :mod:`.batch_memory` (the memory a batch's tensors cross in to that
process), :mod:`.batcher`
(the trio queue that gathers requests into batches), :mod:`.stats` (request log and
summary lines), :mod:`.engine` (a GO19 port's engine), :mod:`.protocol` (the OpenAI
port's requests and errors, pydantic models), :mod:`.openai_app` (the OpenAI-compatible
HTTP app) and :mod:`.server` (all of it in one trio run). Only :mod:`.loading`,
:mod:`.decoding`, :mod:`.preparing`, :mod:`.generation` and :mod:`.model_process` import
torch.
"""
