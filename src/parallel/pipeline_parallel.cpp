#include "verl/parallel/pipeline_parallel.h"

#include <sstream>
#include <string>

#include "verl/common/error.h"

namespace verl::parallel {
namespace {

constexpr const char* kPipelineParallelComponent = "pipeline";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A tensor's dtype and shape as text ("-" for an undefined one), so that a receiver can allocate it.
std::string describe(const torch::Tensor& t) {
  if (!t.defined()) return "-";
  std::ostringstream out;
  out << static_cast<int>(t.scalar_type()) << ' ' << t.dim();
  for (int64_t d : t.sizes()) out << ' ' << d;
  return out.str();
}

torch::Tensor allocate(std::istream& in, const torch::Device& device) {
  std::string first;
  in >> first;
  if (first == "-") return {};
  int64_t dim = 0;
  in >> dim;
  std::vector<int64_t> sizes(static_cast<size_t>(dim));
  for (auto& d : sizes) in >> d;
  VERL_ASSERT(!in.fail(), kPipelineParallelComponent, "a malformed transfer header");
  const auto dtype = static_cast<torch::ScalarType>(std::stoi(first));
  return torch::empty(sizes, torch::TensorOptions().dtype(dtype).device(device));
}

// `tensor` from rank `root` of the two-stage communicator `pair` (the other rank's argument is ignored).
torch::Tensor transfer(const torch::Tensor& tensor, Comm& pair, int root, const torch::Device& device) {
  VERL_ASSERT(pair.size() == 2, kPipelineParallelComponent, "a link between stages has ", pair.size(), " ranks");
  std::string header = pair.rank() == root ? describe(tensor) : std::string();
  pair.broadcast_bytes(header, root);
  std::istringstream in(header);
  torch::Tensor out = pair.rank() == root ? tensor.contiguous() : allocate(in, device);
  VERL_ASSERT(out.defined(), kPipelineParallelComponent, "an undefined tensor between stages");
  pair.broadcast(out, root);
  return out;
}

PipelineLinks* links_at(AutogradContext* ctx) {
  return reinterpret_cast<PipelineLinks*>(ctx->saved_data["links"].toInt());
}

// Forward: the previous stage's hidden states; backward: their gradient back to it. `anchor` (a scalar that
// requires grad) puts this node in the graph, since the received tensor has no input of its own.
struct ReceiveActivation : torch::autograd::Function<ReceiveActivation> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& anchor, PipelineLinks* links,
                               const torch::Device& device) {
    ctx->saved_data["links"] = reinterpret_cast<int64_t>(links);
    return transfer(torch::Tensor(), *links->previous, /*root=*/0, device);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    transfer(grads[0], *links_at(ctx)->previous, /*root=*/1, grads[0].device());
    return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Forward: h to the next stage, a scalar 0 out; backward: h's gradient from the next stage.
struct SendActivation : torch::autograd::Function<SendActivation> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, PipelineLinks* links) {
    ctx->saved_data["links"] = reinterpret_cast<int64_t>(links);
    ctx->saved_data["device"] = h.device();
    transfer(h, *links->next, /*root=*/0, h.device());
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(h.device()));
  }
  static variable_list backward(AutogradContext* ctx, variable_list) {
    const torch::Device device = ctx->saved_data["device"].toDevice();
    return {transfer(torch::Tensor(), *links_at(ctx)->next, /*root=*/1, device), torch::Tensor()};
  }
};

}  // namespace

std::shared_ptr<PipelineLinks> pipeline_links(const std::shared_ptr<Comm>& stages, bool ring) {
  VERL_CHECK(stages != nullptr, kPipelineParallelComponent, "pipeline parallelism needs a communicator");
  auto links = std::make_shared<PipelineLinks>();
  links->stages = stages;
  const int s = stages->rank(), count = stages->size();
  // Each stage belongs to two neighbour pairs: (0,1), (2,3), ... from one split, (1,2), (3,4), ... from another.
  auto even_pairs = stages->split(s / 2, s);
  auto odd_pairs = stages->split((s + 1) / 2, s);
  if (s > 0) links->previous = (s - 1) % 2 == 0 ? even_pairs : odd_pairs;
  if (s < count - 1) links->next = s % 2 == 0 ? even_pairs : odd_pairs;
  const bool ends = s == 0 || s == count - 1;
  auto embedding = stages->split(ends ? 0 : 1 + s, s);
  if (ends && count > 1) links->embedding = embedding;
  if (ring && count > 1) {
    // (P-1, 0): the last stage rank 0 (it sends forward), the first rank 1.
    auto wrap = stages->split(ends ? 0 : 1 + s, s == count - 1 ? 0 : 1);
    if (s == 0) links->previous = wrap;
    if (s == count - 1) links->next = wrap;
  }
  return links;
}

int64_t pipeline_chunk_layers(int64_t num_layers, int64_t stages, int64_t virtual_stages, const std::string& key,
                              const std::string& virtual_key) {
  VERL_CHECK(virtual_stages >= 1, "config", virtual_key, "=", virtual_stages, " must be >= 1");
  if (virtual_stages == 1) {
    VERL_CHECK(stages >= 1 && num_layers % stages == 0, "config", key, "=", stages, " must divide config.json's ",
               "num_hidden_layers (", num_layers, "): each stage holds the same number of layers");
  } else {
    VERL_CHECK(stages >= 1 && num_layers % (stages * virtual_stages) == 0, "config", key, "=", stages, " x ",
               virtual_key, "=", virtual_stages, " must divide config.json's num_hidden_layers (", num_layers,
               "): each virtual stage holds the same number of layers");
  }
  return num_layers / (stages * virtual_stages);
}

torch::Tensor receive_activation(const std::shared_ptr<PipelineLinks>& links, const torch::Device& device,
                                 bool requires_grad) {
  VERL_ASSERT(links && links->previous, kPipelineParallelComponent, "the first stage receives no activation");
  if (!requires_grad) return transfer(torch::Tensor(), *links->previous, /*root=*/0, device);
  const auto anchor = torch::zeros({}, torch::TensorOptions().device(device).requires_grad(true));
  return ReceiveActivation::apply(anchor, links.get(), device);
}

torch::Tensor send_activation(const torch::Tensor& h, const std::shared_ptr<PipelineLinks>& links) {
  VERL_ASSERT(links && links->next, kPipelineParallelComponent, "the last stage sends no activation");
  if (!h.requires_grad()) {
    transfer(h, *links->next, /*root=*/0, h.device());
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(h.device()));
  }
  return SendActivation::apply(h, links.get());
}

std::vector<torch::Tensor> broadcast_outputs(const std::vector<torch::Tensor>& outputs, const PipelineLinks& links,
                                             const torch::Device& device) {
  Comm& stages = *links.stages;
  const int root = stages.size() - 1;
  std::string header;
  if (links.last()) {
    for (const auto& t : outputs) header += describe(t) + "\n";
  }
  stages.broadcast_bytes(header, root);
  if (links.last()) {
    for (const auto& t : outputs) {
      if (!t.defined()) continue;
      auto sent = t.detach().contiguous();
      stages.broadcast(sent, root);
    }
    return outputs;
  }
  std::vector<torch::Tensor> received;
  std::istringstream in(header);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    torch::Tensor t = allocate(fields, device);
    if (t.defined()) stages.broadcast(t, root);
    received.push_back(t);
  }
  return received;
}

}  // namespace verl::parallel
