"""`go19 label ... --ray` as a job: a :class:`~orchestrator.label.job.LabelJob` whose engines
are Ray actors, one KataGo each (:mod:`orchestrator.cluster.label`).

Only the engines differ from the single-engine job: the games, the folder, ``--resume``, the
summary and the exit statuses are :mod:`orchestrator.label.job`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.cluster.label import ClusterOptions, RayLabelRun
from orchestrator.cluster.label_actor import EngineSpec
from orchestrator.cluster.ray_session import ClusterError, check_address, import_ray, ray_session
from orchestrator.label.job import LabelJob, finish, open_folder, progress, say


@dataclass(frozen=True, slots=True)
class RayJob:
    """Where the engines run: ``address`` the cluster to join (``auto``, ``HOST:PORT``),
    None for a local Ray started for this run; how many engines and what each reserves."""

    address: str | None = None
    cluster: ClusterOptions = ClusterOptions()


def run_label_ray(job: LabelJob, ray: RayJob) -> int:
    """The job on Ray's actors; the exit status (:func:`orchestrator.label.job.run_label`'s,
    and 2 when Ray is missing or cannot be reached)."""
    given = {name: None if path is None else str(path.resolve())
             for name, path in (("katago", job.katago.binary), ("model", job.katago.model),
                                ("config", job.katago.config))}
    cluster = ray.cluster
    threads = None if cluster.gpus_per_engine else max(1, round(cluster.cpus_per_engine))
    spec = EngineSpec(binary=given["katago"], model=given["model"], config=given["config"],
                      log_dir=str(job.out.resolve()), opencl_threads=threads)
    try:
        check_address(ray.address)
        import_ray()  # before anything is written
    except ClusterError as exc:
        say(exc)
        return 2
    # Input without a game to label is refused as the single-engine job refuses it: before
    # Ray starts, nothing written. The engines' files are checked on their nodes.
    opened = open_folder(job, lambda: None)
    if isinstance(opened, int):
        return opened
    _, games, void_files, writer = opened
    reporter, shown = progress()
    label_run = RayLabelRun(writer, spec, job.options, cluster, reporter)

    def label() -> None:
        with ray_session(ray.address, num_cpus=None) as session, shown:
            label_run.run(session, games)

    def more() -> dict[str, Any]:
        return {"ray": {"address": ray.address or "local", "engines": cluster.engines,
                        "gpus_per_engine": cluster.gpus_per_engine,
                        "cpus_per_engine": cluster.cpus_per_engine,
                        "nodes": sorted({s.node for s in label_run.slots if s.node})}}

    return finish(label, label_run, writer, job, games, void_files, fatal=(ClusterError,),
                  more=more)

