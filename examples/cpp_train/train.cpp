// cpp_train: trains a small convolutional classifier for a few steps with libtorch on
// batches that godali decodes, resizes and normalises. Each batch is handed to libtorch
// without a copy: godali_pipeline_output gives a DLPack tensor, at::fromDLPack wraps its
// memory and calls its deleter when the tensor is freed.
//
//   cpp_train <file_root> [steps]
//
// file_root holds one subdirectory of images per class (torchvision's ImageFolder).
// Exits 0 when every batch came without a copy and the loss went down.
#include <godali.h>  // godali.h first or after the torch headers: either order works.
#include <torch/torch.h>
#include <ATen/DLConvertor.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

void must(godali_status_t st, const char *what) {
  if (st != GODALI_OK) {
    std::fprintf(stderr, "cpp_train: %s: %s\n", what, godali_last_error());
    std::exit(1);
  }
}

// The pipeline: read, decode, resize to 64x64, normalise into float CHW, as
// fn.readers.file / fn.decoders.image / fn.resize / fn.crop_mirror_normalize would.
std::string pipeline_json(const std::string &root) {
  std::string quoted;
  for (char c : root) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return R"({"batch_size": 4, "num_threads": 2, "device_id": null, "seed": 7,
    "ops": [
      {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"],
       "args": {"file_root": ")" + quoted + R"(", "random_shuffle": true, "pad_last_batch": true}},
      {"op": "decoders.image", "inputs": ["jpegs"], "outputs": ["images"],
       "args": {"output_type": "RGB"}},
      {"op": "resize", "inputs": ["images"], "outputs": ["resized"],
       "args": {"resize_x": 64, "resize_y": 64}},
      {"op": "crop_mirror_normalize", "inputs": ["resized"], "outputs": ["out"],
       "args": {"dtype": "FLOAT", "output_layout": "CHW",
                "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}
    ],
    "outputs": ["out", "labels"]})";
}

// output takes output `index` of the current batch as a tensor that shares godali's memory.
at::Tensor output(godali_pipeline_t p, int index, bool *copied) {
  DLManagedTensor *t = nullptr;
  must(godali_pipeline_output(p, index, &t), "godali_pipeline_output");
  const void *data = static_cast<char *>(t->dl_tensor.data) + t->dl_tensor.byte_offset;
  at::Tensor x = at::fromDLPack(t);  // owns t now: its deleter runs when x is freed
  if (x.data_ptr() != data) *copied = true;
  return x;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cpp_train <file_root> [steps]\n");
    return 2;
  }
  const std::string root = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  int classes = 0;
  for (const auto &e : std::filesystem::directory_iterator(root))
    if (e.is_directory()) classes++;
  if (classes < 2 || steps < 2) {
    std::fprintf(stderr, "cpp_train: %s needs at least 2 class folders; steps at least 2\n",
                 root.c_str());
    return 2;
  }
  torch::manual_seed(0);
  at::set_num_threads(1);

  const std::string json = pipeline_json(root);
  godali_pipeline_t p = 0;
  must(godali_pipeline_create(json.data(), json.size(), &p), "godali_pipeline_create");
  must(godali_pipeline_build(p), "godali_pipeline_build");

  torch::nn::Sequential model(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).stride(2).padding(1)),
      torch::nn::ReLU(),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).stride(2).padding(1)),
      torch::nn::ReLU(),
      torch::nn::AdaptiveAvgPool2d(1),
      torch::nn::Flatten(),
      torch::nn::Linear(16, classes));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  bool copied = false;
  std::vector<double> losses;
  for (int step = 0; step < steps; step++) {
    godali_status_t st = godali_pipeline_next(p);
    if (st == GODALI_END_OF_EPOCH) {
      must(godali_pipeline_reset(p), "godali_pipeline_reset");
      st = godali_pipeline_next(p);
    }
    must(st, "godali_pipeline_next");
    at::Tensor images = output(p, 0, &copied);          // float [N, 3, 64, 64]
    at::Tensor labels = output(p, 1, &copied).view(-1);  // int32 [N, 1]
    if (step == 0)
      std::printf("batch: images %s %s, labels %s\n",
                  c10::str(images.sizes()).c_str(), c10::toString(images.scalar_type()),
                  c10::toString(labels.scalar_type()));
    opt.zero_grad();
    at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(images),
                                                           labels.to(torch::kLong));
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
    std::printf("step %2d  loss %.4f\n", step, losses.back());
  }
  must(godali_pipeline_destroy(p), "godali_pipeline_destroy");

  const size_t k = losses.size() / 4 > 0 ? losses.size() / 4 : 1;
  double first = 0, last = 0;
  for (size_t i = 0; i < k; i++) {
    first += losses[i] / k;
    last += losses[losses.size() - 1 - i] / k;
  }
  std::printf("mean loss: first %zu steps %.4f, last %zu steps %.4f; %s\n", k, first, k, last,
              copied ? "a batch was COPIED" : "no batch was copied");
  if (copied || !(last < first)) {
    std::fprintf(stderr, "cpp_train: FAIL: %s\n",
                 copied ? "at::fromDLPack copied a batch" : "the loss did not go down");
    return 1;
  }
  return 0;
}
