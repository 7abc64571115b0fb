#!/usr/bin/env python3
"""Generates the workload profiles in configs/workloads/ (Python 3 standard library only).

A profile lists, per layer of a real network, its parameter count and its forward and backward compute
time on one GPU of a stated device, in a stated precision, at a stated per-GPU batch size. One file per
(network, device, precision): a config names the file it runs, and the file carries every figure its
times come from. Every figure is derived here, reproducibly:

  parameters   from the layer shapes of the published architecture (every tensor counted); the total is
               checked against the published total of the network.
  FLOPs        2 per multiply-accumulate of every convolution and matrix product of the layer at the
               stated batch size (elementwise work is ignored where a layer has matrix products, counted
               as one FLOP per element per operation where it has none, e.g. embeddings).
               Backward = 2 x forward (one product for the gradient of the input, one for the gradient
               of the weights; Kaplan et al. 2020, "Scaling Laws for Neural Language Models",
               arXiv:2001.08361, Sec. 2.1: ~2N forward, ~4N backward FLOPs per token), except the first
               layer, whose input needs no gradient (1 x forward).
  times        FLOPs / (achieved efficiency x device peak). The device peak is the datasheet's dense
               rate for the profile's precision (DEVICES below). The achieved efficiency is, in order:
               1. measured: calibrated so that the whole iteration takes exactly the time of a published
                  single-GPU measurement of this network on this device in this precision (MEASURED);
               2. transferred: the network's efficiency on a device it was measured on, times the ratio
                  of a measured network of the same family (PROXY: ResNet-50 for the convolutional
                  networks, BERT-Large for the transformers) between the two devices / precisions;
               3. carried: on the H100, for which no per-network table is published in the sources
                  used here, the A100's efficiency in the same precision (an assumption, stated in each
                  such file's "derivation").

Precisions: "fp32" (V100: FP32 CUDA cores), "tf32" (A100, H100: what their fp32 training runs on, TF32
tensor cores, as NVIDIA's tables measure it), "mixed" (FP16/BF16 tensor cores with FP32 master weights).

Files: configs/workloads/<network>_<device>_<precision>.json; the paper's runs (V100, mixed precision)
keep their unsuffixed names (vgg16.json, resnet50.json, bert_large_squad.json), so that the configs
naming them keep working.

Run from the repository root:  python3 scripts/make_profiles.py   (rewrites configs/workloads/*.json)
"""

import json
import os

# Datasheet peaks, dense (no structured sparsity), per device and precision.
DEVICES = {
    # NVIDIA, "NVIDIA V100 Tensor Core GPU" datasheet (2020), V100 SXM2: single precision 15.7 TFLOP/s,
    # tensor performance 125 TFLOP/s. BAGUA's evaluation cluster has "8 NVIDIA V100 32GB GPUs
    # interconnected by NVLink" per server (tutorials.baguasys.com/benchmark): the SXM2 part.
    "v100": {
        "name": "NVIDIA V100 SXM2 32GB",
        "peak": {"fp32": 15.7e12, "mixed": 125e12},
        "source": "NVIDIA V100 Tensor Core GPU datasheet (2020), V100 SXM2: single precision 15.7 TFLOP/s, "
                  "tensor performance (mixed precision) 125 TFLOP/s",
    },
    # NVIDIA, "NVIDIA A100 Tensor Core GPU" datasheet: TF32 tensor core 156 TFLOP/s (312 with sparsity),
    # BF16 / FP16 tensor core 312 TFLOP/s (624 with sparsity); the same for the 40GB and 80GB SXM4 parts.
    "a100": {
        "name": "NVIDIA A100 SXM4",
        "peak": {"tf32": 156e12, "mixed": 312e12},
        "source": "NVIDIA A100 Tensor Core GPU datasheet, A100 SXM: TF32 tensor core 156 TFLOP/s, BF16/FP16 "
                  "tensor core 312 TFLOP/s (dense; twice that with sparsity)",
    },
    # NVIDIA, "NVIDIA H100 Tensor Core GPU" datasheet, H100 SXM: TF32 tensor core 989 TFLOP/s and
    # BF16 / FP16 tensor core 1,979 TFLOP/s "with sparsity"; dense is half of each.
    "h100": {
        "name": "NVIDIA H100 SXM5 80GB",
        "peak": {"tf32": 494.5e12, "mixed": 989.5e12},
        "source": "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: TF32 tensor core 989 TFLOP/s, BF16/FP16 "
                  "tensor core 1,979 TFLOP/s with sparsity; dense: half, 494.5 and 989.5 TFLOP/s",
    },
}
PRECISION_NAMES = {"fp32": "fp32 (FP32 CUDA cores)", "tf32": "fp32 training on TF32 tensor cores",
                   "mixed": "mixed precision (FP16/BF16 tensor cores, FP32 master weights)"}
# Which precision of the V100 a precision of another device is compared with (transfer rule 2).
V100_PRECISION = {"fp32": "fp32", "tf32": "fp32", "mixed": "mixed"}

BACKWARD_RULE = ("backward FLOPs = 2 x forward (input and weight gradients; Kaplan et al. 2020, "
                 "arXiv:2001.08361, Sec. 2.1), 1 x for the first layer (no input gradient)")

BAGUA = ("BAGUA benchmark page (tutorials.baguasys.com/benchmark) and Gan et al., BAGUA, arXiv:2107.01499 "
         "Sec. 5: 16 servers x 8 NVIDIA V100 32GB (NVLink), 100 Gbps TCP/IP; VGG16 on ImageNet at 32 images "
         "per GPU, BERT-Large finetune on SQuAD at 6 sequences per GPU")

DLE_RN50 = ("NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, Training "
            "performance results (pytorch-21.03 NGC container), 1 GPU; batch sizes from ConvNets/configs.yml "
            "(resnet50)")
DLE_BERT = ("NVIDIA DeepLearningExamples, TensorFlow/LanguageModeling/BERT/README.md, fine-tuning training "
            "performance for SQuAD v1.1 (TensorFlow 20.06-py3 NGC container), 1 GPU, sequence length 384")
PADDLE = ("PaddlePaddle repository, paddle/contrib/float16/float16_benchmark.md (2018): 'Vgg16 on imagenet', "
          "total inference time for one batch on one V100, CUDA 9.0, cuDNN 7.1.1, mb=32")
MEGATRON = ("Narayanan et al. 2021, 'Efficient Large-Scale Language Model Training on GPU Clusters Using "
            "Megatron-LM', arXiv:2104.04473, Table 1, first row: a 1.7B-parameter GPT (24 layers, hidden "
            "2304) data-parallel on 32 A100s (no tensor or pipeline parallelism), 137 TFLOP/s per GPU (44% "
            "of peak), counted with activation recomputation (4 forward passes' worth of FLOPs per "
            "iteration; Sec. 5.1 / Appendix)")

# Published single-GPU measurements: (network, device, precision) -> the measurement. Each gives the
# iteration time at its batch size, or the achieved rate of model FLOPs.
MEASURED = {
    ("vgg16", "v100", "mixed"): {
        "forward_ms": 30.47, "batch_size": 32,
        "summary": "forward pass 30.47 ms at batch 32 in float16 on one V100 (PaddlePaddle float16 "
                   "benchmark); backward at the same achieved rate",
        "citation": PADDLE + ", float16 with tensor cores"},
    ("vgg16", "v100", "fp32"): {
        "forward_ms": 84.42, "batch_size": 32,
        "summary": "forward pass 84.42 ms at batch 32 in float32 on one V100 (PaddlePaddle float16 "
                   "benchmark); backward at the same achieved rate",
        "citation": PADDLE + ", float32"},
    ("resnet50", "v100", "mixed"): {
        "throughput_per_s": 1156, "batch_size": 256,
        "summary": "1156 images/s training on one V100 32GB, mixed precision, batch 256 (NVIDIA "
                   "DeepLearningExamples ResNet50 v1.5 for PyTorch)",
        "citation": DLE_RN50 + ": NVIDIA DGX-1 32GB (8x V100 32GB), mixed precision 1156 img/s (DGX1V AMP "
                    "batch 256)"},
    ("resnet50", "v100", "fp32"): {
        "throughput_per_s": 356, "batch_size": 112,
        "summary": "356 images/s training on one V100 32GB, FP32, batch 112 (NVIDIA DeepLearningExamples "
                   "ResNet50 v1.5 for PyTorch)",
        "citation": DLE_RN50 + ": NVIDIA DGX-1 32GB (8x V100 32GB), FP32 356 img/s (DGX1V FP32 batch 112)"},
    ("resnet50", "a100", "mixed"): {
        "throughput_per_s": 2470, "batch_size": 256,
        "summary": "2470 images/s training on one A100 80GB, mixed precision, batch 256 (NVIDIA "
                   "DeepLearningExamples ResNet50 v1.5 for PyTorch)",
        "citation": DLE_RN50 + ": NVIDIA DGX A100 (8x A100 80GB), mixed precision 2470 img/s (DGXA100 AMP "
                    "batch 256)"},
    ("resnet50", "a100", "tf32"): {
        "throughput_per_s": 938, "batch_size": 256,
        "summary": "938 images/s training on one A100 80GB, TF32, batch 256 (NVIDIA DeepLearningExamples "
                   "ResNet50 v1.5 for PyTorch)",
        "citation": DLE_RN50 + ": NVIDIA DGX A100 (8x A100 80GB), TF32 938 img/s (DGXA100 TF32 batch 256)"},
    ("bert_large_squad", "v100", "mixed"): {
        "throughput_per_s": 51.02, "batch_size": 24,
        "summary": "51.02 sequences/s SQuAD v1.1 fine-tuning on one V100 32GB, mixed precision, batch 24, "
                   "sequence length 384 (NVIDIA DeepLearningExamples BERT for TensorFlow)",
        "citation": DLE_BERT + ", DGX-1 32GB: mixed precision 51.02 sentences/s at batch 24"},
    ("bert_large_squad", "v100", "fp32"): {
        "throughput_per_s": 10.42, "batch_size": 10,
        "summary": "10.42 sequences/s SQuAD v1.1 fine-tuning on one V100 32GB, FP32, batch 10, sequence "
                   "length 384 (NVIDIA DeepLearningExamples BERT for TensorFlow)",
        "citation": DLE_BERT + ", DGX-1 32GB: FP32 10.42 sentences/s at batch 10"},
    ("bert_large_squad", "a100", "mixed"): {
        "throughput_per_s": 102.26, "batch_size": 32,
        "summary": "102.26 sequences/s SQuAD v1.1 fine-tuning on one A100 40GB, mixed precision, batch 32, "
                   "sequence length 384 (NVIDIA DeepLearningExamples BERT for TensorFlow)",
        "citation": DLE_BERT + ", DGX A100 40GB: mixed precision 102.26 sentences/s at batch 32"},
    ("bert_large_squad", "a100", "tf32"): {
        "throughput_per_s": 61.364, "batch_size": 16,
        "summary": "61.364 sequences/s SQuAD v1.1 fine-tuning on one A100 40GB, TF32, batch 16, sequence "
                   "length 384 (NVIDIA DeepLearningExamples BERT for TensorFlow)",
        "citation": DLE_BERT + ", DGX A100 40GB: TF32 61.364 sentences/s at batch 16"},
    # 137 TFLOP/s counted over 4 forward passes' worth of FLOPs (recomputation); this profile, without
    # recomputation, counts 3 (forward + 2 x backward) in the same time: 137 x 3/4 of model FLOPs.
    ("gpt2_xl", "a100", "mixed"): {
        "model_flops_per_s": 137e12 * 3 / 4, "batch_size": 8,
        "summary": "137 TFLOP/s per A100 with recomputation, i.e. 102.75 TFLOP/s of model FLOPs, for a "
                   "1.7B-parameter GPT trained data-parallel in mixed precision (Narayanan et al. 2021, "
                   "Megatron-LM)",
        "citation": MEGATRON},
}
PROXY = {"vgg16": "resnet50", "resnet50": "resnet50", "bert_large_squad": "bert_large_squad",
         "bert_base_squad": "bert_large_squad", "gpt2_xl": "bert_large_squad",
         "transformer_aishell2": "bert_large_squad"}

class Layer:
    def __init__(self, name, params, fwd_flops, shape):
        self.name = name
        self.params = params
        self.fwd_flops = fwd_flops
        self.shape = shape  # how `params` follows from the architecture


def conv(name, cin, cout, k, hout, wout, batch, bias, bn):
    """A k x k convolution (optionally with bias, optionally followed by batch norm) at output size
    hout x wout. BN has 2 trainable parameters per channel (weight, bias)."""
    params = cout * cin * k * k + (cout if bias else 0) + (2 * cout if bn else 0)
    fwd = 2 * batch * hout * wout * cout * cin * k * k
    shape = f"conv {cout}x{cin}x{k}x{k}" + (f" + bias {cout}" if bias else "") + (
        f" + batchnorm 2x{cout}" if bn else "")
    return Layer(name, params, fwd, shape)


def dense(name, fin, fout, tokens, extra_params=0, extra_shape=""):
    params = fin * fout + fout + extra_params
    fwd = 2 * tokens * fin * fout
    return Layer(name, params, fwd, f"linear {fout}x{fin} + bias {fout}{extra_shape}")




def flops_of(layers):
    """(forward FLOPs, backward FLOPs) per layer under the backward rule."""
    bwd = [2 * l.fwd_flops for l in layers]
    bwd[0] = layers[0].fwd_flops
    return [l.fwd_flops for l in layers], bwd


def measured_efficiency(layers_at, key, peak):
    """The achieved fraction of `peak` of a measurement (MEASURED[key]); `layers_at(batch)` builds the
    network at a batch size. Returns (efficiency, iteration seconds at the measurement's batch)."""
    m = MEASURED[key]
    layers = layers_at(m["batch_size"])
    fwd, bwd = flops_of(layers)
    total = sum(fwd) + sum(bwd)
    if "forward_ms" in m:
        iteration_s = m["forward_ms"] * 1e-3 * total / sum(fwd)
    elif "throughput_per_s" in m:
        iteration_s = m["batch_size"] / m["throughput_per_s"]
    else:
        iteration_s = total / m["model_flops_per_s"]
    return total / (iteration_s * peak), iteration_s


def write(path, name, description, batch, layers, device, precision, efficiency, measurement, derivation,
          published_params, published_source, sources):
    peak = DEVICES[device]["peak"][precision]
    rate = efficiency * peak
    fwd, bwd = flops_of(layers)
    times = [(f / rate, b / rate) for f, b in zip(fwd, bwd)]
    iteration_s = (sum(fwd) + sum(bwd)) / rate
    total = sum(l.params for l in layers)
    measurement = dict(measurement)
    measurement["iteration_ms"] = round(iteration_s * 1e3, 6)
    doc = {
        "name": name,
        "description": description,
        "device": DEVICES[device]["name"],
        "precision": precision,
        "precision_note": PRECISION_NAMES[precision],
        "peak_flops": peak,
        "batch_size": batch,
        "source": measurement["summary"],
        "total_params": total,
        "published_params": published_params,
        "published_params_source": published_source,
        "measured": measurement,
        "achieved_efficiency": round(efficiency, 6),
        "derivation": (f"params from layer shapes; time of a layer = its FLOPs / (achieved_efficiency x "
                       f"peak_flops, {peak / 1e12:g} TFLOP/s); " + derivation + "; " + BACKWARD_RULE),
        "sources": dict(sources, device=DEVICES[device]["source"], backward=BACKWARD_RULE),
        "layers": [
            {
                "name": l.name,
                "params": l.params,
                "forward_us": round(t[0] * 1e6, 3),
                "backward_us": round(t[1] * 1e6, 3),
                "forward_flops": f,
                "backward_flops": b,
                "source": l.shape,
            }
            for l, t, f, b in zip(layers, times, fwd, bwd)
        ],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"{os.path.relpath(path)}: {len(layers)} layers, {total} params (published {published_params}), {device} "
          f"{precision}, iteration {iteration_s * 1e3:.3f} ms at batch {batch}, efficiency {efficiency:.3f}")


def vgg16(batch):
    """torchvision vgg16 (Simonyan & Zisserman 2015, configuration D) on 224 x 224 ImageNet images."""
    cfg = [(64, 224), (64, 224), (128, 112), (128, 112), (256, 56), (256, 56), (256, 56), (512, 28),
           (512, 28), (512, 28), (512, 14), (512, 14), (512, 14)]
    names = ["conv1_1", "conv1_2", "conv2_1", "conv2_2", "conv3_1", "conv3_2", "conv3_3", "conv4_1",
             "conv4_2", "conv4_3", "conv5_1", "conv5_2", "conv5_3"]
    layers, cin = [], 3
    for name, (cout, hw) in zip(names, cfg):
        layers.append(conv(name, cin, cout, 3, hw, hw, batch, bias=True, bn=False))
        cin = cout
    layers.append(dense("fc6", 512 * 7 * 7, 4096, batch))
    layers.append(dense("fc7", 4096, 4096, batch))
    layers.append(dense("fc8", 4096, 1000, batch))
    return layers


def resnet50(batch):
    """torchvision resnet50 (He et al. 2016; v1.5: the stride of a downsampling bottleneck is in its 3x3
    convolution) on 224 x 224 ImageNet images. One profile layer per convolution with its batch norm."""
    layers = [conv("conv1", 3, 64, 7, 112, 112, batch, bias=False, bn=True)]
    cin, hw = 64, 56  # after the stride-2 3x3 max pool
    for stage, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]):
        cout = 4 * width
        for b in range(blocks):
            s = stride if b == 0 else 1
            hw_out = hw // s
            p = f"layer{stage + 1}.{b}"
            layers.append(conv(p + ".conv1", cin, width, 1, hw, hw, batch, bias=False, bn=True))
            layers.append(conv(p + ".conv2", width, width, 3, hw_out, hw_out, batch, bias=False, bn=True))
            layers.append(conv(p + ".conv3", width, cout, 1, hw_out, hw_out, batch, bias=False, bn=True))
            if b == 0:
                layers.append(conv(p + ".downsample", cin, cout, 1, hw_out, hw_out, batch, bias=False,
                                   bn=True))
            cin, hw = cout, hw_out
    layers.append(dense("fc", 2048, 1000, batch))
    return layers


def bert_squad(batch, seq, num_layers, h, inter):
    """BERT (Devlin et al. 2019) with the uncased WordPiece vocabulary of 30522, 512 positions, 2 token
    types, and the SQuAD span head (HuggingFace BertForQuestionAnswering: no pooler, an h -> 2 linear
    layer). Two profile layers per encoder layer: self-attention (Q, K, V, output projections and layer
    norm) and feed-forward (two linear layers and layer norm)."""
    vocab, positions, types = 30522, 512, 2
    tokens = batch * seq
    ln = 2 * h
    emb_params = vocab * h + positions * h + types * h + ln
    # No matrix products: 2 additions (word + position + type) and a layer norm (~5 operations: mean,
    # variance, normalize, scale, shift) per element of the batch's embeddings.
    layers = [Layer("embeddings", emb_params, 7 * tokens * h,
                    f"word {vocab}x{h} + position {positions}x{h} + token type {types}x{h} + layernorm 2x{h}")]
    for i in range(num_layers):
        attn_params = 4 * (h * h + h) + ln
        attn_flops = 2 * tokens * h * 3 * h + 2 * 2 * batch * seq * seq * h + 2 * tokens * h * h
        layers.append(Layer(f"layer{i}.attention", attn_params, attn_flops,
                            f"q, k, v, output linear 4x({h}x{h} + bias {h}) + layernorm 2x{h}"))
        ffn_params = h * inter + inter + inter * h + h + ln
        layers.append(Layer(f"layer{i}.ffn", ffn_params, 2 * 2 * tokens * h * inter,
                            f"linear {inter}x{h} + bias {inter}, linear {h}x{inter} + bias {h}, "
                            f"layernorm 2x{h}"))
    layers.append(dense("qa_outputs", h, 2, tokens))
    return layers


def gpt2_xl(batch):
    """GPT-2 XL (Radford et al. 2019, Table 2: 48 layers, d_model 1600; 25 heads of 64; vocabulary 50257,
    context 1024), every tensor of HuggingFace GPT2LMHeadModel('gpt2-xl'): token and position embeddings
    (wte, wpe), per block ln_1, attn.c_attn (1600 -> 4800, the fused Q, K, V), attn.c_proj, ln_2,
    mlp.c_fc (1600 -> 6400), mlp.c_proj; ln_f; the language-model head is tied to wte (no parameters of
    its own, its matrix product counted with ln_f). Sequences of the full context, 1024 tokens."""
    d, vocab, context, num_layers = 1600, 50257, 1024, 48
    seq = context
    tokens = batch * seq
    # wte lookup + wpe addition: one FLOP per element.
    layers = [Layer("embeddings", vocab * d + context * d, tokens * d,
                    f"wte {vocab}x{d} + wpe {context}x{d}")]
    for i in range(num_layers):
        attn_params = 2 * d + (d * 3 * d + 3 * d) + (d * d + d)
        # Q, K, V projection, scores Q K^T and their weighting of V (2 x seq x d per token), output
        # projection.
        attn_flops = 2 * tokens * d * 3 * d + 2 * 2 * batch * seq * seq * d + 2 * tokens * d * d
        layers.append(Layer(f"h{i}.attn", attn_params, attn_flops,
                            f"ln_1 2x{d}, c_attn {d}x{3 * d} + bias {3 * d}, c_proj {d}x{d} + bias {d}"))
        mlp_params = 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d)
        layers.append(Layer(f"h{i}.mlp", mlp_params, 2 * 2 * tokens * d * 4 * d,
                            f"ln_2 2x{d}, c_fc {d}x{4 * d} + bias {4 * d}, c_proj {4 * d}x{d} + bias {d}"))
    layers.append(Layer("ln_f+lm_head", 2 * d, 2 * tokens * d * vocab,
                        f"ln_f 2x{d}; lm_head {vocab}x{d} tied to wte (no own parameters)"))
    return layers


# The speech Transformer of the BAGUA paper's speech task (Transformer on AISHELL-2; the benchmark page:
# "Transformer on AISHELL-2 with 64 GPUs; batch size per GPU is 32"). Neither the paper nor Bagua's
# examples give its architecture; this is WeNet's AISHELL-2 recipe, the joint CTC / attention
# Transformer that examples/aishell2/s0/run.sh trains by default (train_config=
# conf/train_unified_transformer.yaml, wenet-e2e/wenet): encoder 12 blocks, decoder 6 blocks, output_size
# (d_model) 256, 4 attention heads, linear_units 2048, input_layer conv2d, normalize_before, 80 mel bins
# (fbank_conf.num_mel_bins), CTC weight 0.3; every tensor as wenet/models/transformer/ builds it
# (subsampling.py Conv2dSubsampling4, encoder_layer.py, decoder_layer.py, attention.py,
# positionwise_feed_forward.py, ctc.py; sinusoidal positions and the global CMVN are buffers, not
# parameters). The vocabulary: WeNet's AISHELL-2 character table, test/resources/aishell2.words.txt,
# 5235 symbols (<blank>, <unk>, 5232 characters, <sos/eos>); its CTC layer, decoder embedding and
# output layer are each that wide.
AISHELL2_VOCAB = 5235
AISHELL2_MEL_BINS = 80
# Lengths per utterance, for the FLOPs only (parameters do not depend on them). Kaldi's egs/aishell2
# README: "1000 hours of speech data (around 1 million utterances)": 3.6 s on average, i.e. 358 frames
# of WeNet's fbank (frame_length 25 ms, frame_shift 10 ms: 1 + (3600 - 25) // 10). Characters per
# utterance: no source found states AISHELL-2's mean transcript length; 14 is an assumption (3.6 s of
# read Mandarin at about 4 characters a second), and the decoder reads them after <sos>: 15 positions.
AISHELL2_FRAMES = 1 + (3600 - 25) // 10
AISHELL2_CHARS = 14


def transformer_aishell2(batch):
    """WeNet's AISHELL-2 Transformer (above) at `batch` utterances of the mean length. Profile layers in
    the order of the forward pass (wenet/models/transformer/asr_model.py: encoder, CTC branch, attention
    decoder): the convolutional subsampling, per encoder block its self-attention (Q, K, V, output
    projections and norm1) and feed-forward (w_1, w_2, norm2), the encoder's final layer norm, the CTC
    projection, the decoder's embedding, per decoder block its self-attention, source attention and
    feed-forward (each with its layer norm), and the decoder's final norm with the output layer."""
    d, heads, units, enc_blocks, dec_blocks = 256, 4, 2048, 12, 6
    vocab, mel = AISHELL2_VOCAB, AISHELL2_MEL_BINS
    assert d % heads == 0
    # Conv2dSubsampling4: two 3x3 convolutions of stride 2 over (time, mel), then a linear layer.
    t1, f1 = (AISHELL2_FRAMES - 3) // 2 + 1, (mel - 3) // 2 + 1
    t2, f2 = (t1 - 3) // 2 + 1, (f1 - 3) // 2 + 1
    assert f2 == ((mel - 1) // 2 - 1) // 2  # the width subsampling.py gives its linear layer
    enc_tokens = batch * t2
    positions = AISHELL2_CHARS + 1
    dec_tokens = batch * positions
    ln = 2 * d
    attn_params = 4 * (d * d + d) + ln
    ffn_params = d * units + units + units * d + d + ln
    embed_params = (d * 1 * 3 * 3 + d) + (d * d * 3 * 3 + d) + (d * f2 * d + d)
    embed_flops = (2 * batch * t1 * f1 * d * 1 * 9 + 2 * batch * t2 * f2 * d * d * 9
                   + 2 * enc_tokens * d * f2 * d)
    layers = [Layer("encoder.embed", embed_params, embed_flops,
                    f"conv {d}x1x3x3 + bias {d}, conv {d}x{d}x3x3 + bias {d}, linear {d}x{d * f2} + bias "
                    f"{d} ({mel} mel bins, {AISHELL2_FRAMES} frames -> {t2})")]

    def self_attention(tokens, length):
        # Q, K, V projections, scores Q K^T and their weighting of V (2 x length x d per token), output.
        return 2 * tokens * d * 3 * d + 2 * 2 * batch * length * length * d + 2 * tokens * d * d

    attn_shape = f"linear_q, linear_k, linear_v, linear_out 4x({d}x{d} + bias {d}) + layernorm 2x{d}"
    ffn_shape = f"w_1 {units}x{d} + bias {units}, w_2 {d}x{units} + bias {d}, layernorm 2x{d}"
    for i in range(enc_blocks):
        layers.append(Layer(f"encoder{i}.self_attn", attn_params, self_attention(enc_tokens, t2), attn_shape))
        layers.append(Layer(f"encoder{i}.ffn", ffn_params, 2 * 2 * enc_tokens * d * units, ffn_shape))
    # A layer norm: ~5 operations per element (mean, variance, normalize, scale, shift).
    layers.append(Layer("encoder.after_norm", ln, 5 * enc_tokens * d, f"layernorm 2x{d}"))
    layers.append(Layer("ctc", d * vocab + vocab, 2 * enc_tokens * d * vocab,
                        f"ctc_lo linear {vocab}x{d} + bias {vocab}"))
    # Embedding lookup, scaled by sqrt(d) and added to the sinusoidal position: 2 operations per element.
    layers.append(Layer("decoder.embed", vocab * d, 2 * dec_tokens * d, f"embedding {vocab}x{d}"))
    for i in range(dec_blocks):
        layers.append(Layer(f"decoder{i}.self_attn", attn_params, self_attention(dec_tokens, positions),
                            attn_shape))
        # Q from the decoder's positions, K and V from the encoder's frames, scores and weighting
        # (2 x frames x d per position), output projection.
        src_flops = (2 * dec_tokens * d * d + 2 * 2 * enc_tokens * d * d + 2 * 2 * batch * positions * t2 * d
                     + 2 * dec_tokens * d * d)
        layers.append(Layer(f"decoder{i}.src_attn", attn_params, src_flops, attn_shape))
        layers.append(Layer(f"decoder{i}.ffn", ffn_params, 2 * 2 * dec_tokens * d * units, ffn_shape))
    layers.append(Layer("decoder.output", ln + d * vocab + vocab, 5 * dec_tokens * d + 2 * dec_tokens * d * vocab,
                        f"after_norm layernorm 2x{d}, output_layer linear {vocab}x{d} + bias {vocab}"))
    return layers


# The networks: how to build each at a batch size, its description, the batch of its derived profiles,
# its published parameter total, and its other citations.
NETWORKS = {
    "vgg16": {
        "layers": vgg16, "batch": 32,
        "description": "VGG16 (configuration D) on ImageNet, 224x224, 1000 classes, torchvision layout",
        "published": 138357544,
        "published_source": "torchvision.models.vgg16 documentation (VGG16_Weights.IMAGENET1K_V1): num_params "
                            "138357544; Simonyan & Zisserman 2015 (arXiv:1409.1556) Table 2: 138M",
        "sources": {"architecture": "Simonyan & Zisserman 2015, arXiv:1409.1556, config D", "paper": BAGUA}},
    "resnet50": {
        "layers": resnet50, "batch": 256,
        "description": "ResNet-50 v1.5 on ImageNet, 224x224, 1000 classes, torchvision layout",
        "published": 25557032,
        "published_source": "torchvision.models.resnet50 documentation (ResNet50_Weights.IMAGENET1K_V1): "
                            "num_params 25557032 (the 25.6M usually quoted)",
        "sources": {"architecture": "He et al. 2016, arXiv:1512.03385; torchvision v1.5 variant",
                    "paper": "a common reference network, not part of the BAGUA evaluation"}},
    "bert_large_squad": {
        "layers": lambda b: bert_squad(b, 384, 24, 1024, 4096), "batch": 24,
        "description": "BERT-Large (uncased) fine-tuning on SQuAD v1.1, sequence length 384, span head",
        "published": 340000000,
        "published_source": "Devlin et al. 2019 (arXiv:1810.04805) Sec. 3: BERT-LARGE (L=24, H=1024, A=16), "
                            "total parameters 340M (rounded; the uncased 30522-token vocabulary gives "
                            "334094338 with the span head)",
        "sources": {"architecture": "Devlin et al. 2019, arXiv:1810.04805; HuggingFace "
                                    "BertForQuestionAnswering (no pooler, 1024x2 span head)", "paper": BAGUA}},
    "bert_base_squad": {
        "layers": lambda b: bert_squad(b, 384, 12, 768, 3072), "batch": 32,
        "description": "BERT-Base (uncased) fine-tuning on SQuAD v1.1, sequence length 384, span head",
        "published": 110000000,
        "published_source": "Devlin et al. 2019 (arXiv:1810.04805) Sec. 3: BERT-BASE (L=12, H=768, A=12), "
                            "total parameters 110M (rounded; the uncased 30522-token vocabulary gives "
                            "108893186 with the span head)",
        "sources": {"architecture": "Devlin et al. 2019, arXiv:1810.04805; HuggingFace "
                                    "BertForQuestionAnswering (no pooler, 768x2 span head)",
                    "paper": "Gan et al., BAGUA, arXiv:2107.01499 Sec. 5 (BERT-BASE among its tasks)"}},
    "transformer_aishell2": {
        "layers": transformer_aishell2, "batch": 32,
        "description": "Speech Transformer (joint CTC / attention) on AISHELL-2, WeNet's AISHELL-2 recipe: 12 "
                       "encoder and 6 decoder blocks, d_model 256, 80 mel bins, 5235 characters",
        "published": 31123430,
        "published_source": "no published total for this recipe: the count of every tensor of WeNet's model "
                            "built from examples/aishell2/s0/conf/train_unified_transformer.yaml with the "
                            "5235-symbol table (checked independently in tests/core/models/profile_test.cc)",
        "sources": {"architecture": "wenet-e2e/wenet examples/aishell2/s0/conf/train_unified_transformer.yaml "
                                    "(run.sh's default train_config) and wenet/models/transformer/",
                    "vocabulary": "wenet-e2e/wenet test/resources/aishell2.words.txt: 5235 symbols",
                    "lengths": f"{AISHELL2_FRAMES} fbank frames (3.6 s: Kaldi egs/aishell2 README, 1000 hours "
                               f"in around 1 million utterances; 25 ms windows every 10 ms) and "
                               f"{AISHELL2_CHARS} characters per utterance (an assumption: no source found "
                               f"states the mean transcript length)",
                    "paper": "BAGUA benchmark page (tutorials.baguasys.com/benchmark): Transformer on AISHELL-2, "
                             "batch size per GPU 32; Gan et al., BAGUA, arXiv:2107.01499 Sec. 5 (its speech "
                             "task; the architecture is not given there)"}},
    "gpt2_xl": {
        "layers": gpt2_xl, "batch": 8,
        "description": "GPT-2 XL (1.5B), decoder-only language model, context 1024, HuggingFace gpt2-xl layout",
        "published": 1557611200,
        "published_source": "HuggingFace transformers GPT2LMHeadModel.from_pretrained('gpt2-xl')"
                            ".num_parameters(): 1557611200, the sum of every tensor here; Radford et al. "
                            "2019, 'Language Models are Unsupervised Multitask Learners', Table 2: 1542M "
                            "(rounded differently)",
        "sources": {"architecture": "Radford et al. 2019, Table 2 (48 layers, d_model 1600) and the gpt2-xl "
                                    "config (n_head 25, vocab_size 50257, n_positions 1024)",
                    "paper": "a model of today, not part of the BAGUA evaluation"}},
}
# The profiles written: every network on every device in both precisions of the device.
FILES = [(n, d, p) for n in NETWORKS for d in DEVICES for p in DEVICES[d]["peak"]]
PAPER_FILES = {("vgg16", "v100", "mixed"): "vgg16.json", ("resnet50", "v100", "mixed"): "resnet50.json",
               ("bert_large_squad", "v100", "mixed"): "bert_large_squad.json"}


def efficiency_of(network, device, precision, memo={}):
    """(efficiency, measurement dict, derivation text) of (network, device, precision): measured,
    transferred from the network's V100 measurement by its family's proxy, or carried from the A100."""
    key = (network, device, precision)
    if key in memo:
        return memo[key]
    layers_at = NETWORKS[network]["layers"]
    peak = DEVICES[device]["peak"][precision]
    if key in MEASURED:
        e, _ = measured_efficiency(layers_at, key, peak)
        m = {k: v for k, v in MEASURED[key].items()}
        result = (e, m, "measured: achieved_efficiency calibrated so that the sum of all forward and "
                        "backward times at measured.batch_size equals the measured iteration")
    elif device == "h100":
        e, m, _ = efficiency_of(network, "a100", precision)
        m = {"summary": f"no published H100 measurement used: the A100's achieved fraction of peak "
                        f"({e:.4f}, {precision}) carried to the H100's peak (an assumption)",
             "from": f"{network}_a100_{precision}"}
        result = (e, m, "carried: the A100 profile's achieved_efficiency in the same precision (assumed)")
    else:
        proxy = PROXY[network]
        own = [k for k in MEASURED if k[0] == network]
        if own:  # the network's own measurement, moved by its proxy's ratio between the two points
            ref = next((k for k in own if k[2] == V100_PRECISION.get(precision, precision)), own[0])
        else:  # no measurement of the network at all: the proxy's efficiency at this point
            ref = None
        pe, _, _ = efficiency_of(proxy, device, precision)
        if ref is None:
            e = pe
            m = {"summary": f"no published measurement of {network}: the achieved fraction of peak of "
                            f"{proxy} on the same device in the same precision ({pe:.4f}; an assumption)",
                 "from": f"{proxy}_{device}_{precision}"}
            how = f"transferred: {proxy}'s achieved_efficiency on this device and precision (assumed)"
        else:
            re_, _, _ = efficiency_of(*ref)
            pr, _, _ = efficiency_of(proxy, ref[1], ref[2])
            e = re_ * pe / pr
            m = {"summary": f"{network}'s {ref[1]} {ref[2]} efficiency ({re_:.4f}) x {proxy}'s "
                            f"{device} {precision} / {ref[1]} {ref[2]} efficiencies ({pe:.4f} / {pr:.4f})",
                 "from": [f"{ref[0]}_{ref[1]}_{ref[2]}", f"{proxy}_{device}_{precision}",
                          f"{proxy}_{ref[1]}_{ref[2]}"]}
            how = (f"transferred: {network}'s measured efficiency on the {ref[1]} ({ref[2]}) times the "
                   f"ratio of {proxy}'s measured efficiencies on the {device} ({precision}) and the "
                   f"{ref[1]} ({ref[2]})")
        result = (e, m, how)
    memo[key] = result
    return result


def file_name(network, device, precision):
    return PAPER_FILES.get((network, device, precision), f"{network}_{device}_{precision}.json")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(root, "configs", "workloads")
    os.makedirs(out, exist_ok=True)
    for network, device, precision in FILES:
        net = NETWORKS[network]
        efficiency, measurement, how = efficiency_of(network, device, precision)
        # A measured profile is stated at its measurement's batch; a derived one at the network's batch.
        batch = measurement.get("batch_size", net["batch"])
        layers = net["layers"](batch)
        name = network if (network, device, precision) in PAPER_FILES else f"{network}_{device}_{precision}"
        write(os.path.join(out, file_name(network, device, precision)), name, net["description"], batch,
              layers, device, precision, efficiency, measurement, how, net["published"],
              net["published_source"], net["sources"])


if __name__ == "__main__":
    main()
