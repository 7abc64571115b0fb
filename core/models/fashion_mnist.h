// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, "Fashion-MNIST: a Novel Image Dataset for Benchmarking
// Machine Learning Algorithms", arXiv:1708.07747): 60,000 training and 10,000 test images of 28 x 28
// grey pixels, 10 classes of clothing, as Debian's dataset-fashion-mnist installs them
// (/usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz; read by
// core/models/idx.h).
//
// Terms:
//   train set   the 60,000 training images, in the files' order (already mixed: every class has
//               between 86 and 115 of the first 1,000 images), dealt to the ranks by the partition
//               (core/models/dataset.h: iid, or Dirichlet(alpha) label-skewed shards)
//   test set    the 10,000 test images, never trained on: test accuracy is measured on all of them
//   features    the 784 pixels, standardized per pixel with the train set's mean and standard
//               deviation (a pixel of zero deviation is only centred), as the data set's own benchmark
//               does (benchmark/runner.py: sklearn's StandardScaler fitted on the train set)
//   model       softmax: multinomial logistic regression (784 x 10 weights and 10 biases, 7,850
//               parameters); mlp: 784 -> hidden (tanh) x hidden_layers -> 10 (core/models/synthetic.h)
//   train loss  what the trainer reports as the full loss: the mean cross-entropy over the first
//               eval_samples images of the train set (a fixed subset: the whole set at every rank and
//               evaluation would cost more than the training)
//
// Evaluation (train loss and test accuracy) is real arithmetic outside modelled time. Ranks whose
// weights are equal (every exact algorithm) would repeat the same arithmetic: a workload remembers the
// results of the last weights it evaluated, compared element by element, so that such ranks share one
// evaluation (results are a function of the weights alone: what the memory holds changes no number).
#pragma once

#include <memory>
#include <string>

#include "core/models/dataset.h"
#include "core/models/model.h"
#include "core/params.h"

namespace bagua {

struct FashionMnistData {
  Dataset train;  // 784 x 60,000, standardized
  Dataset test;   // 784 x 10,000, standardized with the train set's statistics
};

// The data set under `dir`, loaded once per process and directory while anyone holds it (concurrent
// callers share one copy). ConfigError naming the file when one is missing, truncated or malformed.
std::shared_ptr<const FashionMnistData> load_fashion_mnist(const std::string& dir);

ParamSchema fashion_mnist_schema();
std::unique_ptr<Workload> make_fashion_mnist(const Params& params, const WorkloadSetup& setup);

}  // namespace bagua
