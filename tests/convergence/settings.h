// The reduced settings the convergence tests share: the models of configs/convergence/ made smaller and
// shorter (8 ranks on 2 hosts, 192 iterations), so that every run takes a few tens of milliseconds.
#pragma once

namespace bagua::convergence {

// Linear regression with a closed-form optimum. 32 features and 4096 samples: the Hessian X X^T / N has
// eigenvalues in about [(1 - sqrt(32/4096))^2, (1 + sqrt(32/4096))^2] = [0.83, 1.19]
// (Marchenko-Pastur), so at lr 0.05 SGD contracts the gap by about (1 - 0.05)^2 per step: from 0.5 to
// its constant-step noise floor (about 1e-5 here) in about 150 of the 192 steps.
inline constexpr const char* kLinear =
    R"({"name": "linear_regression", "batch_size": 16, "features": 32, "samples": 4096,
        "noise": 0.1, "layers": 2})";
// The same data, split among the ranks by Dirichlet(0.1) over 10 quantile buckets of the target: shards
// of different sizes, each covering a few slices of the target range.
inline constexpr const char* kLinearSkewed =
    R"({"name": "linear_regression", "batch_size": 16, "features": 32, "samples": 4096,
        "noise": 0.1, "layers": 2, "partition": "dirichlet", "alpha": 0.1})";
// Binary logistic regression on two Gaussian clusters, label-skewed by Dirichlet(0.1): most ranks hold
// mostly one class.
inline constexpr const char* kLogisticSkewed =
    R"({"name": "logistic_regression", "batch_size": 16, "features": 16, "samples": 4096,
        "layers": 2, "partition": "dirichlet", "alpha": 0.1})";

inline constexpr double kLinearLr = 0.05;
inline constexpr double kLogisticLr = 0.5;
inline constexpr int kIterations = 192;  // a multiple of every local SGD period used (8, 32)
inline constexpr int kRanks = 8;         // 2 hosts x 4 devices

inline constexpr const char* kBaseline = R"({"name": "gradient_allreduce"})";

}  // namespace bagua::convergence
