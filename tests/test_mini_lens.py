"""helpers/mini/lens.py: the masked-LM lens of the shipped course-mini over held-out blanks, and the
held-out line lesson 14 shows, on the real checkpoint in data/course_mini/."""

from helpers.lens.compute import course_mini_lens
from helpers.mini.lens import LensByLayer, course_mini_lens_by_layer, held_out_line


def test_lens_by_layer_scores_every_layer_against_the_guessers():
    agg = course_mini_lens_by_layer(12, baseline_pairs=400)
    assert isinstance(agg, LensByLayer)
    assert len(agg.top1) == len(agg.versus_bigram) == 5  # embeddings + course-mini's 4 layers
    assert agg.blanks > 12 and 1 <= agg.documents <= agg.blanks
    assert set(agg.nulls) == {"position and segment", "neighbour bigrams"}
    for interval in agg.top1:
        assert 0 <= interval.low <= interval.estimate <= interval.high <= 1
    assert all(0 <= share <= 1 for share in agg.nulls.values())
    assert [v.a for v in agg.versus_bigram] == ["embeddings", "layer 1", "layer 2", "layer 3", "layer 4"]
    assert {v.kind for v in agg.versus_bigram} <= {"higher", "lower", "equivalent", "inconclusive"}


def test_held_out_line_is_one_course_mini_gets_right():
    line = held_out_line(seed=0)
    assert 8 <= len(line.split()) <= 20
    found = course_mini_lens(line)
    assert int(found.lens.target_ranks[-1]) == 1, "the rule: the last layer's first guess is the hidden word"
