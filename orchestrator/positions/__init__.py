"""One SGF file's games replayed into per-move rows (:mod:`.samples`, the reference, and
:mod:`.fastreplay`, its compiled twin): what a dataset build keeps and what ``go19 label``
asks KataGo about, read by the same code so the two join exactly."""
