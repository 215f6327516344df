"""What an interrupted lazy run says it keeps: the finished α, each checkpoint's flow time,
and the α that started without reaching a checkpoint."""

import numpy as np

from experiments._sweep_parts import checkpoint_path, task_key
from experiments.lazy._pipeline import Kept


def test_the_interrupt_phrase_names_each_checkpointed_alpha_and_its_flow_time(tmp_path):
    kept = Kept(str(tmp_path), [1.0, 10.0, 100.0])
    kept.finished = 1
    assert str(kept) == "1 of 3 α finished"
    np.savez(checkpoint_path(str(tmp_path), task_key({"alpha": 10.0})), t=np.array(0.96))
    assert str(kept) == (
        "1 of 3 α finished, and the checkpoints of α=10 up to t=0.96 (--resume goes on from them)"
    )
    kept.started.update({1.0, 10.0, 100.0})
    kept.ended.add(1.0)
    assert str(kept).endswith(
        "(--resume goes on from them); α=100 started but reached no checkpoint yet (compiling), "
        "so starts again"
    )
