#!/usr/bin/env python3
"""PyTorch peer of bench/embed.ts: BERT-base shapes (transformers BertModel, random init), f16 on the GPU, eager,
sequence 128, batch 1 and 64: embeddings per second, the last hidden state computed (and synchronized) per batch.
Usage: python3 bench/torch_embed.py [--out FILE] [--seq 128] [--batch 1,64] [--reps 10]"""
import argparse
import json
import time

import torch
from transformers import BertConfig, BertModel

from receipt_commit import receipt_commit

ap = argparse.ArgumentParser()
ap.add_argument("--out", default="torch-embed.json")
ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--batch", default="1,64")
ap.add_argument("--reps", type=int, default=10)
a = ap.parse_args()
torch.manual_seed(0)
model = BertModel(BertConfig(), add_pooling_layer=False).half().cuda().eval()
results = []
with torch.no_grad():
    for batch in [int(b) for b in a.batch.split(",")]:
        ids = torch.randint(0, 30522, (batch, a.seq), device="cuda")
        for _ in range(3):
            model(input_ids=ids).last_hidden_state
        torch.cuda.synchronize()
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            h = model(input_ids=ids).last_hidden_state.float().cpu()
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        ms = times[len(times) // 2]
        r = {"batch": batch, "sequence": a.seq, "msPerBatchMedian": ms, "embeddingsPerSecond": batch / ms * 1000, "mode": "eager f16, hidden states copied to the host"}
        results.append(r)
        print(json.dumps(r))
json.dump({"benchmark": "torch-embed", "commit": receipt_commit(), "torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": results}, open(a.out, "w"), indent=1)
