"""helpers.classify.widgets: the logits box on the real bundled model."""

from helpers.classify.compute import train_head
from helpers.classify.widgets import LogitsBox


def test_logits_box_updates_bars_and_caches(tokenizer, model, intent_data):
    train, _, ft, _ = intent_data
    L = ft.num_layers
    head = train_head(ft.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    box = LogitsBox(tokenizer, model, head, train.names, layer=L, pooling="mean", sentence="play some jazz please")
    before_png, before_heights = box.image.value, [b.get_height() for b in box.bars]
    calls = []
    handle = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        box.text.value = "wake me up at six tomorrow"
        assert not calls, "typing alone must not run the model"
        box.button.click()
        assert len(calls) == 1
        assert [b.get_height() for b in box.bars] != before_heights and box.image.value != before_png
        assert train.names[box.prediction] in box.ax.get_title()
        box.update(sentence="play some jazz please")  # seen before: cached
        assert len(calls) == 1 and [b.get_height() for b in box.bars] == before_heights
    finally:
        handle.remove()
    box.update(sentence="   ")
    assert [b.get_height() for b in box.bars] == before_heights, "an empty sentence changes nothing"
    b2, values = LogitsBox.for_benchmark(tokenizer, model)
    b2.update(**values[0])


def test_logits_box_keeps_one_y_scale_that_holds_every_logit(tokenizer, model, intent_data):
    train, _, ft, _ = intent_data
    L = ft.num_layers
    head = train_head(ft.layer(L, "cls"), train.labels, train.num_classes, progress=False)
    box = LogitsBox(tokenizer, model, head, train.names, layer=L, sentence=train.texts[0])
    limits = [box.ax.get_ylim()]
    for text in train.texts[:: max(1, len(train.texts) // 8)]:
        box.update(sentence=text)
        lo, hi = box.ax.get_ylim()
        logits = box.logits_for(text)
        assert lo < min(0.0, float(logits.min())) and max(0.0, float(logits.max())) < hi, "a bar is cut off"
        assert lo <= limits[-1][0] and hi >= limits[-1][1], "the scale must never shrink between sentences"
        limits.append((lo, hi))


def test_logits_box_truncates_a_long_sentence_and_says_so(tokenizer, model):
    from helpers.classify.widgets import LogitsBox
    from helpers.model.trace import max_input_tokens

    long = " ".join(["Could you wake me up at half past six tomorrow?"] * 80)
    box, values = LogitsBox.for_benchmark(tokenizer, model, text=long)
    limit = max_input_tokens(tokenizer, model)
    assert box.input_tokens == limit
    note = box.truncation_note(long)
    assert f"at most {limit}: truncated" in note
    assert f"first {limit} tokens" in box.ax.get_title()
    assert box.truncation_note(values[0]["sentence"]) == ""  # a short one fits
    box.update(**values[0])
    assert box.input_tokens < limit and f"first {limit}" not in box.ax.get_title()


def test_logits_box_gives_the_website_its_head_as_numbers(tokenizer, model, intent_data):
    """site_browser (issue 50): the head's float32 numbers, from which the same logits come back
    for a sentence it has not seen; a head the browser does not know gives None."""
    import base64

    import numpy as np
    import torch

    train, test, ft, _ = intent_data
    L = ft.num_layers
    head = train_head(ft.layer(L, "cls"), train.labels, train.num_classes, progress=False)
    box = LogitsBox(tokenizer, model, head, train.names, layer=L, sentence=test.texts[0], examples=test.texts[1:3])
    sent = box.site_browser()

    def array(name):
        return torch.from_numpy(np.frombuffer(base64.b64decode(sent[name]), dtype="<f4").copy())

    assert (sent["layer"], sent["pooling"], sent["names"]) == (L, "cls", list(train.names))
    assert list(sent["examples"]) == test.texts[:3]
    new = "is it going to snow in the mountains this weekend"
    x = box.logits_for(new)  # runs the model: the [CLS] vector comes from the box's own feature path
    from helpers.classify.compute import extract_features

    cls = extract_features(tokenizer, model, [new], progress=False).layer(L, "cls")[0]
    rebuilt = (cls - array("mu")) / array("sigma") @ array("weight").reshape(len(train.names), -1).T + array("bias")
    torch.testing.assert_close(rebuilt, x, atol=1e-5, rtol=0)
    other = torch.nn.Linear(model.config.hidden_size, len(train.names))  # not a LinearHead: no standardising
    assert LogitsBox(tokenizer, model, other, train.names, layer=L, sentence="hi").site_browser() is None
