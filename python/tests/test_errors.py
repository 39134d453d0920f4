"""Bad samples: the message names the file, the pipeline stays usable, on_error="skip"."""

import os

import pytest

import godali
from godali import fn, types

from conftest import make_jpeg, need


@pytest.fixture
def files_with_a_bad_one(tmp_path):
    good = [make_jpeg(str(tmp_path / ("ok%d.jpg" % i)), 20, 24, seed=i) for i in range(5)]
    bad = str(tmp_path / "broken.jpg")
    with open(good[0], "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[:200])  # a truncated JPEG
    # labels by position: batch 0 = [0, 1], batch 1 = [2 (broken), 3], batch 2 = [4, 5]
    return good[:2] + [bad] + good[2:], bad


def _pipe(files, pad_last_batch=False, **kw):
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1, **kw)
    with pipe:
        jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))),
                                        pad_last_batch=pad_last_batch)
        images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), resize_x=8,
                           resize_y=8)
        pipe.set_outputs(images, labels)
    return pipe


def test_bad_file_is_named_and_pipeline_goes_on(files_with_a_bad_one):
    files, bad = files_with_a_bad_one
    pipe = _pipe(files)
    images, labels = pipe.run()
    assert labels.as_array().ravel().tolist() == [0, 1]
    with pytest.raises(godali.DataError) as e:
        pipe.run()
    assert bad in str(e.value) or os.path.basename(bad) in str(e.value)
    assert e.value.status == -4
    images, labels = pipe.run()  # the following batch
    assert labels.as_array().ravel().tolist() == [4, 5]
    # The next epoch follows by itself, as with DALI's readers.
    assert pipe.run()[1].as_array().ravel().tolist() == [0, 1]
    pipe.close()


def test_skip_replaces_and_counts(files_with_a_bad_one):
    files, bad = files_with_a_bad_one
    pipe = _pipe(files, on_error="skip")
    seen = []
    skipped = 0
    for _ in range(3):
        images, labels = pipe.run()
        assert images.as_tensor().shape() == [2, 8, 8, 3]
        skipped += pipe.batch_info.skipped
        seen.append(labels.as_array().ravel().tolist())
    assert skipped == 1
    assert seen[0] == [0, 1] and seen[2] == [4, 5]
    assert 2 not in seen[1]  # the broken file's sample was replaced


def test_missing_file_root_names_it(tmp_path):
    missing = str(tmp_path / "does_not_exist")
    pipe = godali.Pipeline(batch_size=1)
    with pipe:
        _, labels = fn.readers.file(file_root=missing)
        pipe.set_outputs(labels)
    with pytest.raises(godali.GodaliError) as e:
        pipe.build()
    assert "does_not_exist" in str(e.value)


def test_decompression_bomb_refused(tmp_path):
    big = make_jpeg(str(tmp_path / "big.jpg"), 300, 400, seed=1)
    pipe = godali.Pipeline(batch_size=1, max_image_pixels=100 * 100)
    with pipe:
        jpegs, _ = fn.readers.file(files=[big])
        pipe.set_outputs(fn.decoders.image(jpegs))
    with pytest.raises(godali.DataError) as e:
        pipe.run()
    assert "big.jpg" in str(e.value)


def test_skip_names_the_skipped_files(files_with_a_bad_one):
    files, bad = files_with_a_bad_one
    pipe = _pipe(files, on_error="skip")
    pipe.run()
    assert pipe.skipped() == []
    pipe.run()
    sk = pipe.skipped()
    assert len(sk) == 1 and pipe.batch_info.skipped == 1
    assert sk[0]["sample"] == 0 and sk[0]["file"] == bad and sk[0]["error"]
    assert sk[0]["node"].startswith("decoders.image")
    pipe.run()
    assert pipe.skipped() == []


def test_iterator_names_the_skipped_files(files_with_a_bad_one):
    need("torch")
    from godali.plugin.pytorch import GodaliGenericIterator
    files, bad = files_with_a_bad_one
    it = GodaliGenericIterator([_pipe(files, on_error="skip")], ["images", "labels"],
                               size=6)
    next(it)
    assert it.skipped() == [[]]
    next(it)
    assert [[d["file"] for d in p] for p in it.skipped()] == [[bad]]


def test_missing_file_root_is_an_invalid_argument(tmp_path):
    missing = str(tmp_path / "does_not_exist")
    pipe = godali.Pipeline(batch_size=1)
    with pipe:
        _, labels = fn.readers.file(file_root=missing)
        pipe.set_outputs(labels)
    with pytest.raises(godali.InvalidArgumentError) as e:
        pipe.build()
    assert "file_root" in str(e.value) and missing in str(e.value)


def test_oversized_output_refused_at_build(files_with_a_bad_one):
    files, _ = files_with_a_bad_one
    pipe = godali.Pipeline(batch_size=2)
    with pipe:
        jpegs, _ = fn.readers.file(files=files)
        pipe.set_outputs(fn.resize(fn.decoders.image(jpegs), resize_x=100000,
                                   resize_y=100000, name="huge"))
    with pytest.raises(godali.InvalidPipelineError) as e:
        pipe.build()
    assert "huge" in str(e.value) and "resize_x" in str(e.value)
    assert "max_image_pixels" in str(e.value)


def test_out_of_memory_is_its_own_error(files_with_a_bad_one):
    files, _ = files_with_a_bad_one
    # One batch of the output is 65536 x 3 x 16384 x 16384 x 4 bytes: more than any
    # address space.
    pipe = godali.Pipeline(batch_size=65536, num_threads=2, max_image_pixels=0)
    with pipe:
        jpegs, _ = fn.readers.file(files=files)
        pipe.set_outputs(fn.crop_mirror_normalize(
            fn.decoders.image(jpegs), crop=(16384, 16384), dtype=types.FLOAT,
            out_of_bounds_policy="pad"))
    with pytest.raises(godali.OutOfMemoryError) as e:
        pipe.build()
    assert isinstance(e.value, MemoryError) and e.value.status == -8
    assert "out of memory" in str(e.value) and "goroutine" not in str(e.value)
    # The failed build left nothing behind: it may be retried, and fails the same way.
    with pytest.raises(godali.OutOfMemoryError):
        pipe.build()
    pipe.close()


def test_trailing_data_after_the_description_is_refused(lib, files_with_a_bad_one):
    from ctypes import byref, c_uint64
    files, _ = files_with_a_bad_one
    pipe = _pipe(files)
    text = (pipe.to_json() + " {}").encode()
    with pytest.raises(godali.InvalidPipelineError) as e:
        lib.pipeline_create(text, len(text), byref(c_uint64(0)))
    assert "offset %d" % (len(text) - 3) in str(e.value)


def test_two_resets_in_a_row_do_not_skip_an_epoch(files_with_a_bad_one):
    files, bad = files_with_a_bad_one
    # Padded: every epoch has the same 3 batches (without padding DALI's reader is one
    # stream and epochs have 3, 2, 3, ... batches of 2 out of 5 files).
    pipe = _pipe([f for f in files if f != bad], pad_last_batch=True)
    pipe.reset()  # before the first batch: nothing to skip
    epochs = []
    for _ in range(3):
        while True:
            pipe.schedule_run()
            try:
                pipe._epoch_outputs()  # within one epoch: StopIteration at its end
            except StopIteration:
                break
            epochs.append(pipe.batch_info.epoch)
        pipe.reset()
        pipe.reset()
    assert epochs == [0, 0, 0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("n", [0, -2, 257])
def test_num_threads_out_of_range_is_refused(n):
    # -1 is "not given" (the library's default); 0 and other values outside 1..256 are
    # mistakes that used to become 4 silently.
    with pytest.raises(ValueError, match="num_threads must be 1 to 256"):
        godali.Pipeline(batch_size=2, num_threads=n)
    assert godali.Pipeline(batch_size=2, num_threads=-1).num_threads == -1
