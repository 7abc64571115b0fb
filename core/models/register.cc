#include "core/check.h"
#include "core/models/fashion_mnist.h"
#include "core/models/model.h"
#include "core/models/synthetic.h"

namespace bagua {

void register_workloads(WorkloadRegistry& registry) {
  registry.add("linear_regression",
               "least squares on Gaussian data with a closed-form optimum (exact suboptimality gap)",
               linear_regression_schema(),
               [](const Params& p, const WorkloadSetup& s) -> std::unique_ptr<Workload> {
                 return make_linear_regression(p, s);
               });
  registry.add("logistic_regression", "binary or multinomial logistic regression on Gaussian clusters",
               logistic_regression_schema(),
               [](const Params& p, const WorkloadSetup& s) -> std::unique_ptr<Workload> {
                 return make_logistic_regression(p, s);
               });
  registry.add("mlp",
               "a small non-convex tanh MLP on Gaussian clusters, layer-by-layer backpropagation",
               mlp_schema(), [](const Params& p, const WorkloadSetup& s) -> std::unique_ptr<Workload> {
                 return make_mlp(p, s);
               });
  registry.add("fashion_mnist",
               "Fashion-MNIST images (Debian's dataset-fashion-mnist): softmax regression or an MLP, "
               "test accuracy",
               fashion_mnist_schema(), make_fashion_mnist);
  // Profiles are files: the composition root parses the file named by "file" into a ProfileSpec and
  // calls make_profile_workload (core/models/profile.h). The entry exists so that the workload is
  // listed and its parameter validated like every other.
  registry.add(
      "profile",
      "a real network (VGG16, BERT-Large, ResNet-50, ...) from a per-layer profile file, on meta "
      "buffers",
      ParamSchema().add_string("file", "", "profile JSON file (configs/workloads/*.json)"),
      [](const Params& p, const WorkloadSetup&) -> std::unique_ptr<Workload> {
        throw ConfigError("workload 'profile' (file '" + p.get_string("file") +
                          "') is built from its file by the experiments layer (make_profile_workload), "
                          "not by the registry");
      });
}

}  // namespace bagua
