"""``tools/gpu_tier``'s parts: what a run costs before it runs (:mod:`.plan`), and the tables it
writes (:mod:`.tables`)."""
