#!/usr/bin/env python3
"""Generates the workload profiles in configs/workloads/ (Python 3 standard library only).

A profile lists, per layer of a real network, its parameter count and its forward and backward compute
time on one GPU at a stated per-GPU batch size. Every figure is derived here, reproducibly:

  parameters   from the layer shapes of the published architecture; the total is checked against the
               published total of the network.
  FLOPs        2 per multiply-accumulate of every convolution and matrix product of the layer at the
               stated batch size (elementwise work is ignored where a layer has matrix products, counted
               as one FLOP per element per operation where it has none, e.g. embeddings).
               Backward = 2 x forward (one product for the gradient of the input, one for the gradient
               of the weights; Kaplan et al. 2020, "Scaling Laws for Neural Language Models",
               arXiv:2001.08361, Sec. 2.1: ~2N forward, ~4N backward FLOPs per token), except the first
               layer, whose input needs no gradient (1 x forward).
  times        FLOPs / (achieved efficiency x device peak), where the device peak is the V100's tensor-core
               rate (mixed precision) and the achieved efficiency is calibrated per network so that the
               whole iteration takes exactly the time of a published single-GPU measurement.

Run from the repository root:  python3 scripts/make_profiles.py   (rewrites configs/workloads/*.json)
"""

import json
import os

# NVIDIA Tesla V100 SXM2 datasheet (NVIDIA, "NVIDIA V100 Tensor Core GPU", 2020): tensor-core (mixed
# precision) peak 125 TFLOP/s, single precision 15.7 TFLOP/s, HBM2 900 GB/s. BAGUA's evaluation cluster
# has "8 NVIDIA V100 32GB GPUs interconnected by NVLink" per server (BAGUA benchmark page,
# tutorials.baguasys.com/benchmark), i.e. the SXM2 part.
V100_TENSOR_PEAK_FLOPS = 125e12
V100_SOURCE = "NVIDIA V100 Tensor Core GPU datasheet: SXM2 tensor-core peak 125 TFLOP/s (mixed precision)"
DEVICE = "NVIDIA V100 SXM2 32GB, mixed precision (tensor cores, 125 TFLOP/s peak)"

BACKWARD_RULE = ("backward FLOPs = 2 x forward (input and weight gradients; Kaplan et al. 2020, "
                 "arXiv:2001.08361, Sec. 2.1), 1 x for the first layer (no input gradient)")


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


def calibrate(layers, iteration_s):
    """Per-layer (forward, backward) seconds such that forward + backward of all layers = iteration_s,
    each layer's time proportional to its FLOPs. Returns (times, achieved efficiency)."""
    bwd = [2 * l.fwd_flops for l in layers]
    bwd[0] = layers[0].fwd_flops
    total = sum(l.fwd_flops for l in layers) + sum(bwd)
    efficiency = total / (iteration_s * V100_TENSOR_PEAK_FLOPS)
    rate = efficiency * V100_TENSOR_PEAK_FLOPS
    return [(l.fwd_flops / rate, b / rate) for l, b in zip(layers, bwd)], efficiency, bwd


def write(path, name, description, batch, layers, iteration_s, published_params, published_source,
          measurement, sources):
    times, efficiency, bwd = calibrate(layers, iteration_s)
    total = sum(l.params for l in layers)
    doc = {
        "name": name,
        "description": description,
        "device": DEVICE,
        "batch_size": batch,
        "source": measurement["summary"],
        "total_params": total,
        "published_params": published_params,
        "published_params_source": published_source,
        "measured": measurement,
        "achieved_efficiency": round(efficiency, 6),
        "derivation": ("params from layer shapes; time of a layer = its FLOPs / (achieved_efficiency x "
                       "125 TFLOP/s), achieved_efficiency calibrated so that the sum of all forward and "
                       "backward times equals measured.iteration_ms; " + BACKWARD_RULE),
        "sources": sources,
        "layers": [
            {
                "name": l.name,
                "params": l.params,
                "forward_us": round(t[0] * 1e6, 3),
                "backward_us": round(t[1] * 1e6, 3),
                "forward_flops": l.fwd_flops,
                "backward_flops": b,
                "source": l.shape,
            }
            for l, t, b in zip(layers, times, bwd)
        ],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"{path}: {len(layers)} layers, {total} params (published {published_params}), "
          f"iteration {iteration_s * 1e3:.3f} ms, efficiency {efficiency:.3f}")


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


def bert_large_squad(batch, seq):
    """BERT-Large (Devlin et al. 2019: L=24, H=1024, A=16, feed-forward 4096), uncased WordPiece vocabulary
    of 30522, 512 positions, 2 token types, with the SQuAD span head (HuggingFace
    BertForQuestionAnswering: no pooler, a 1024 -> 2 linear layer). Two profile layers per encoder layer:
    self-attention (Q, K, V, output projections and layer norm) and feed-forward (two linear layers and
    layer norm)."""
    h, inter, vocab, positions, types = 1024, 4096, 30522, 512, 2
    tokens = batch * seq
    ln = 2 * h
    emb_params = vocab * h + positions * h + types * h + ln
    # No matrix products: 2 additions (word + position + type) and a layer norm (~5 operations: mean,
    # variance, normalize, scale, shift) per element of the batch's embeddings.
    layers = [Layer("embeddings", emb_params, 7 * tokens * h,
                    f"word {vocab}x{h} + position {positions}x{h} + token type {types}x{h} + layernorm 2x{h}")]
    for i in range(24):
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


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(root, "configs", "workloads")
    os.makedirs(out, exist_ok=True)

    bagua = ("BAGUA benchmark page (tutorials.baguasys.com/benchmark) and Gan et al., BAGUA, arXiv:2107.01499 "
             "Sec. 5: 16 servers x 8 NVIDIA V100 32GB (NVLink), 100 Gbps TCP/IP; VGG16 on ImageNet at 32 "
             "images per GPU, BERT-Large finetune on SQuAD at 6 sequences per GPU")

    # VGG16. Measurement: PaddlePaddle float16 benchmark (Paddle repository,
    # paddle/contrib/float16/float16_benchmark.md, 2018): VGG16 on 3x224x224 images, one V100,
    # CUDA 9.0 / cuDNN 7.1.1, tensor cores enabled, mini-batch 32: float16 forward pass 30.47 ms. The
    # iteration = that forward pass plus a backward pass at the same achieved rate (backward rule above).
    layers = vgg16(32)
    fwd_s = 30.47e-3
    fwd_flops = sum(l.fwd_flops for l in layers)
    bwd_flops = fwd_flops * 2 - layers[0].fwd_flops
    iteration_s = fwd_s * (fwd_flops + bwd_flops) / fwd_flops
    write(os.path.join(out, "vgg16.json"), "vgg16",
          "VGG16 (configuration D) on ImageNet, 224x224, 1000 classes, torchvision layout", 32, layers,
          iteration_s, 138357544,
          "torchvision.models.vgg16 documentation (VGG16_Weights.IMAGENET1K_V1): num_params 138357544; "
          "Simonyan & Zisserman 2015 (arXiv:1409.1556) Table 2: 138M",
          {"summary": "forward pass 30.47 ms at batch 32 in float16 on one V100 (PaddlePaddle float16 "
                      "benchmark); backward at the same achieved rate",
           "forward_ms": 30.47, "iteration_ms": round(iteration_s * 1e3, 6), "batch_size": 32,
           "citation": "PaddlePaddle repository, paddle/contrib/float16/float16_benchmark.md (2018; also "
                       "github.com/kexinzhao/Paddle_benchmark, float16_benchmark.md): 'Vgg16 on imagenet', "
                       "total inference time for one batch on one V100, CUDA 9.0, cuDNN 7.1.1, float16 with "
                       "tensor cores, mb=32"},
          {"device": V100_SOURCE, "architecture": "Simonyan & Zisserman 2015, arXiv:1409.1556, config D",
           "paper": bagua, "backward": BACKWARD_RULE})

    # ResNet-50 v1.5. Measurement: NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/
    # resnet50v1.5/README.md, "Training performance: NVIDIA DGX-1 32GB (8x V100 32GB)", 1 GPU, mixed
    # precision: 1156 img/s, at the DGX1V AMP batch size of 256 (ConvNets/configs.yml).
    layers = resnet50(256)
    iteration_s = 256 / 1156
    write(os.path.join(out, "resnet50.json"), "resnet50",
          "ResNet-50 v1.5 on ImageNet, 224x224, 1000 classes, torchvision layout", 256, layers, iteration_s,
          25557032,
          "torchvision.models.resnet50 documentation (ResNet50_Weights.IMAGENET1K_V1): num_params 25557032 "
          "(the 25.6M usually quoted)",
          {"summary": "1156 images/s training on one V100 32GB, mixed precision, batch 256 (NVIDIA "
                      "DeepLearningExamples ResNet50 v1.5 for PyTorch)",
           "throughput_per_s": 1156, "batch_size": 256, "iteration_ms": round(iteration_s * 1e3, 6),
           "citation": "NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "
                       "Training performance: NVIDIA DGX-1 32GB (8x V100 32GB), 1 GPU, mixed precision; "
                       "batch 256 from ConvNets/configs.yml (resnet50, DGX1V, AMP)"},
          {"device": V100_SOURCE, "architecture": "He et al. 2016, arXiv:1512.03385; torchvision v1.5 variant",
           "paper": "a common reference network, not part of the BAGUA evaluation", "backward": BACKWARD_RULE})

    # BERT-Large SQuAD fine-tuning. Measurement: NVIDIA DeepLearningExamples,
    # TensorFlow/LanguageModeling/BERT/README.md, "Fine-tuning training performance for SQuAD v1.1 on
    # DGX-1 32GB", 1 GPU, mixed precision, batch 24, sequence length 384: 51.02 sentences/s.
    layers = bert_large_squad(24, 384)
    iteration_s = 24 / 51.02
    write(os.path.join(out, "bert_large_squad.json"), "bert_large_squad",
          "BERT-Large (uncased) fine-tuning on SQuAD v1.1, sequence length 384, span head", 24, layers,
          iteration_s, 340000000,
          "Devlin et al. 2019 (arXiv:1810.04805) Sec. 3: BERT-LARGE (L=24, H=1024, A=16), total parameters "
          "340M (rounded; the uncased 30522-token vocabulary gives 334094338 with the span head)",
          {"summary": "51.02 sequences/s SQuAD v1.1 fine-tuning on one V100 32GB, mixed precision, batch 24, "
                      "sequence length 384 (NVIDIA DeepLearningExamples BERT for TensorFlow)",
           "throughput_per_s": 51.02, "batch_size": 24, "sequence_length": 384,
           "iteration_ms": round(iteration_s * 1e3, 6),
           "citation": "NVIDIA DeepLearningExamples, TensorFlow/LanguageModeling/BERT/README.md, Fine-tuning "
                       "training performance for SQuAD v1.1 on DGX-1 32GB, 1 GPU, mixed precision"},
          {"device": V100_SOURCE, "architecture": "Devlin et al. 2019, arXiv:1810.04805; HuggingFace "
                                                  "BertForQuestionAnswering (no pooler, 1024x2 span head)",
           "paper": bagua, "backward": BACKWARD_RULE})


if __name__ == "__main__":
    main()
