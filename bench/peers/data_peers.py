"""The image loader's peers on a folder that bench/data_bench makes (bench/README.md, "Image loader").

Each pipeline: decode a JPEG, random-resized-crop to 224, flip at random, a batch of 256 uint8
images, as fast as the peer goes on every core; one JSON line per peer with images per second
(median of its timed rounds), or why it did not run.

  python bench/peers/data_peers.py DIR [--peers pytorch,dali,ffcv] [--batches 12]

- pytorch: torch.utils.data.DataLoader, num_workers = cores, each example read with
  torchvision.io.read_file + decode_jpeg and transformed with torchvision.transforms.v2
  (RandomResizedCrop(224, antialias=True), RandomHorizontalFlip) on uint8 tensors.
- dali: NVIDIA DALI's CPU pipeline (device_id=None: no GPU), fn.readers.file,
  fn.decoders.image_random_crop (libjpeg-turbo, decoding only the crop's region), fn.resize,
  fn.flip, num_threads = cores.
- ffcv: FFCV's Loader on a .beton written from the same files (RandomResizedCropRGBImageDecoder,
  RandomHorizontalFlip), num_workers = cores.
"""
import argparse
import json
import os
import statistics
import sys
import time


def files_and_labels(root):
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    out = []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(root, c))):
            if name.endswith(".jpg"):
                out.append((os.path.join(root, c, name), label))
    return out


def timed(batches, rounds=3):
    """images/s of each round of `batches` (an iterator factory of batch sizes); the median."""
    rates = []
    for _ in range(rounds):
        it = batches()
        next(it)  # the workers start and warm: not timed
        start = time.perf_counter()
        images = sum(next(it) for _ in range(args.batches))
        rates.append(images / (time.perf_counter() - start))
    return statistics.median(rates), rates


def run_pytorch(root, cores):
    import torch
    import torchvision
    from torchvision.io import decode_jpeg, read_file
    from torchvision.transforms import v2

    items = files_and_labels(root)
    transform = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()])

    class Folder(torch.utils.data.Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            path, label = items[i]
            return transform(decode_jpeg(read_file(path))), label

    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(Folder(), batch_size=256, shuffle=True, num_workers=cores,
                                         drop_last=True, persistent_workers=True, prefetch_factor=2)

    def batches():
        while True:
            for x, _ in loader:
                yield x.shape[0]

    median, rates = timed(batches)
    return {"torch": torch.__version__, "torchvision": torchvision.__version__, "images_per_s": round(median, 1),
            "rounds": [round(r, 1) for r in rates]}


def run_dali(root, cores):
    from nvidia.dali import fn, pipeline_def, types
    import nvidia.dali

    @pipeline_def(batch_size=256, num_threads=cores, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="reader")
        images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=224, resize_y=224)
        images = fn.flip(images, horizontal=fn.random.coin_flip())
        return images, labels

    p = pipe()
    p.build()

    def batches():
        while True:
            out = p.run()
            yield len(out[0])

    median, rates = timed(batches)
    return {"dali": nvidia.dali.__version__, "images_per_s": round(median, 1), "rounds": [round(r, 1) for r in rates]}


def run_ffcv(root, cores):
    import numpy as np
    import ffcv
    from ffcv.fields import IntField, RGBImageField
    from ffcv.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import RandomHorizontalFlip, ToTensor
    from ffcv.writer import DatasetWriter

    beton = os.path.join(root, "data.beton")
    if not os.path.exists(beton):  # the same JPEG bytes, kept as they are (write_mode raw JPEG)
        items = files_and_labels(root)

        class Raw:
            def __len__(self):
                return len(items)

            def __getitem__(self, i):
                from PIL import Image
                path, label = items[i]
                return np.asarray(Image.open(path).convert("RGB")), label

        DatasetWriter(beton, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                      num_workers=cores).from_indexed_dataset(Raw())
    loader = Loader(beton, batch_size=256, num_workers=cores, order=OrderOption.RANDOM, drop_last=True,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip()],
                               "label": [IntDecoder()]})

    def batches():
        while True:
            for x, _ in loader:
                yield x.shape[0]

    median, rates = timed(batches)
    return {"ffcv": ffcv.__version__, "images_per_s": round(median, 1), "rounds": [round(r, 1) for r in rates]}


parser = argparse.ArgumentParser()
parser.add_argument("dir")
parser.add_argument("--peers", default="pytorch,dali,ffcv")
parser.add_argument("--batches", type=int, default=12)
args = parser.parse_args()
cores = os.cpu_count() or 1
for peer in args.peers.split(","):
    try:
        result = {"pytorch": run_pytorch, "dali": run_dali, "ffcv": run_ffcv}[peer](args.dir, cores)
        print(json.dumps({"case": peer, "workers": cores, **result}), flush=True)
    except ImportError as e:
        print(json.dumps({"case": peer, "skipped": f"not installed in {sys.executable}: {e}"}), flush=True)
    except Exception as e:  # a peer that fails on this machine: say so, run the others
        print(json.dumps({"case": peer, "failed": f"{type(e).__name__}: {e}"[:300]}), flush=True)
