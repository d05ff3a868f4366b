"""Training on go19's exports: ``go19 train-lora`` (:mod:`orchestrator.train.lora`)."""
