// Test doubles for the PPO trainer: small in-process workers with verl's method names and deterministic
// outputs, a prompt dataloader and a reward function, so the controller's step order, metrics and checkpoint
// bookkeeping can be checked without models. Every call is recorded ("actor_rollout.generate_sequences ...").
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/single_controller/worker.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::test {

using protocol::DataProto;
using single_controller::Dispatch;
using single_controller::MethodSpec;
using single_controller::Worker;
using single_controller::WorkerContext;
using single_controller::WorkerFactory;

// Token ids of the char tokenizer (support/char_tokenizer.h).
inline int64_t char_id(char c) {
  if (c >= '0' && c <= '9') return 4 + (c - '0');
  if (c == ',') return 14;
  if (c == ':') return 15;
  if (c == 'S') return 0;
  if (c == 'E') return 1;
  if (c == 'P') return 2;
  return 3;
}

struct CallLog {
  std::mutex mutex;
  std::vector<std::string> calls;             // "<role>.<method>" in call order (rank 0 only)
  std::vector<nlohmann::json> generate_meta;  // meta_info of every generate_sequences (rank 0)
  std::map<std::string, nlohmann::json> init_meta;  // "<role>" -> meta_info of its init_model (rank 0)
  std::vector<int64_t> generate_rows;         // rows of every generate_sequences (all ranks summed)
  std::vector<std::vector<std::string>> update_uids;  // uid column seen by update_actor (rank 0)
  std::string failure;                                // a broken invariant seen inside a worker
  int fail_generate_at_version = -1;                  // simulate a crash: throw when the actor reached this version

  void record(int rank, const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    if (rank == 0) calls.push_back(name);
  }
  int64_t count(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    return std::count(calls.begin(), calls.end(), name);
  }
};

// Writes and reads a small JSON state file for the fake checkpoints.
inline void save_state(const DataProto& input, int rank, const nlohmann::json& state) {
  const std::string dir = input.meta_info.at("local_path").get<std::string>();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/fake_rank_" + std::to_string(rank) + ".json") << state.dump();
}
inline nlohmann::json load_state(const DataProto& input, int rank) {
  const std::string path = input.meta_info.at("local_path").get<std::string>() + "/fake_rank_" +
                           std::to_string(rank) + ".json";
  std::ifstream in(path);
  if (!in.good()) throw std::runtime_error("missing fake checkpoint " + path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

inline std::string rng_text(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

class FakeActorRolloutWorker : public Worker {
 public:
  FakeActorRolloutWorker(const WorkerContext& context, std::shared_ptr<CallLog> log, std::string role,
                         int64_t response_length)
      : Worker(context), log_(std::move(log)), role_(std::move(role)), response_length_(response_length),
        rng_(1234 + static_cast<uint64_t>(context.rank)) {
    auto reg = [this](const std::string& name, Dispatch dispatch, Method method) {
      MethodSpec spec;
      spec.name = name;
      spec.dispatch = dispatch;
      register_method(spec, [this, name, method](const DataProto& in) {
        log_->record(rank(), role_ + "." + name);
        return method(in);
      });
    };
    reg("init_model", Dispatch::OneToAll, [this](const DataProto& in) { return init_model(in); });
    reg("generate_sequences", Dispatch::DpComputeProto, [this](const DataProto& in) { return generate(in); });
    reg("compute_log_prob", Dispatch::DpComputeProto, [this](const DataProto& in) { return log_prob(in, false); });
    reg("compute_ref_log_prob", Dispatch::DpComputeProto, [this](const DataProto& in) { return log_prob(in, true); });
    reg("update_actor", Dispatch::DpComputeProto, [this](const DataProto& in) { return update(in); });
    reg("save_checkpoint", Dispatch::OneToAll, [this](const DataProto& in) {
      save_state(in, rank(), {{"version", version_}, {"rng", rng_text(rng_)}});
      return DataProto();
    });
    reg("load_checkpoint", Dispatch::OneToAll, [this](const DataProto& in) {
      nlohmann::json state = load_state(in, rank());
      version_ = state["version"].get<int>();
      std::istringstream(state["rng"].get<std::string>()) >> rng_;
      return DataProto();
    });
  }

 private:
  DataProto init_model(const DataProto& in) {
    std::lock_guard<std::mutex> lock(log_->mutex);
    if (rank() == 0) log_->init_meta[role_] = in.meta_info;
    return DataProto();
  }

  DataProto generate(const DataProto& in) {
    if (log_->fail_generate_at_version >= 0 && version_ >= log_->fail_generate_at_version) {
      throw std::runtime_error("simulated crash");
    }
    {
      std::lock_guard<std::mutex> lock(log_->mutex);
      if (rank() == 0) log_->generate_meta.push_back(in.meta_info);
      log_->generate_rows.push_back(in.size());
    }
    const torch::Tensor& prompts = in.tensor("input_ids");
    const torch::Tensor& prompt_mask = in.tensor("attention_mask");
    const bool do_sample = in.meta_info.value("do_sample", true);
    const int64_t eos = in.meta_info.at("eos_token_id").get<int64_t>();
    const int64_t pad = in.meta_info.at("pad_token_id").get<int64_t>();
    const int64_t b = in.size(), r = response_length_;
    torch::Tensor responses = torch::full({b, r}, pad, torch::kInt64);
    torch::Tensor response_mask = torch::zeros({b, r}, torch::kInt64);
    for (int64_t i = 0; i < b; ++i) {
      // Sampled: a random length and digits; greedy: the full length, digits from the prompt and version.
      const int64_t length = do_sample ? 1 + static_cast<int64_t>(rng_() % static_cast<uint64_t>(r)) : r;
      const int64_t prompt_sum = prompts[i].sum().item<int64_t>();
      for (int64_t t = 0; t < length; ++t) {
        const int64_t digit = do_sample ? static_cast<int64_t>(rng_() % 10) : (prompt_sum + t + version_) % 10;
        responses[i][t] = t + 1 == length && length < r ? eos : 4 + digit;
        response_mask[i][t] = 1;
      }
    }
    torch::Tensor attention_mask = torch::cat({prompt_mask, response_mask}, 1);
    torch::Tensor position_ids = torch::clamp(attention_mask.cumsum(1) - 1, 0);
    // As verl 0.9.1's agent loop: every row reports its turns (2 or 4 here, so the metrics have a spread).
    std::vector<nlohmann::json> turns;
    for (int64_t i = 0; i < prompts.size(0); ++i) turns.emplace_back(2 + 2 * (i % 2));
    return DataProto::from_dict({{"prompts", prompts},
                                 {"responses", responses},
                                 {"input_ids", torch::cat({prompts, responses}, 1)},
                                 {"attention_mask", attention_mask},
                                 {"position_ids", position_ids},
                                 {"response_mask", response_mask}},
                                {{"__num_turns__", std::move(turns)}});
  }

  DataProto log_prob(const DataProto& in, bool ref) {
    torch::Tensor mask = in.tensor("response_mask").to(torch::kFloat32);
    torch::Tensor tokens = in.tensor("responses").to(torch::kFloat32);
    if (ref) return DataProto::from_dict({{"ref_log_prob", -0.02f * tokens * mask}});
    return DataProto::from_dict({{"old_log_probs", (-0.01f * (1 + version_)) * tokens * mask},
                                 {"entropys", (0.5f + 0.1f * version_) * mask}});
  }

  DataProto update(const DataProto& in) {
    for (const char* key : {"advantages", "old_log_probs", "response_mask", "responses"}) {
      if (!in.has_tensor(key)) log_->failure = std::string("update_actor without ") + key;
    }
    // Responses of one uid must share the prompt (interleaved repeat).
    std::map<std::string, torch::Tensor> prompt_of;
    std::vector<std::string> uids;
    for (int64_t i = 0; i < in.size(); ++i) {
      const std::string uid = in.column("uid")[static_cast<size_t>(i)].get<std::string>();
      uids.push_back(uid);
      auto it = prompt_of.find(uid);
      if (it == prompt_of.end()) {
        prompt_of[uid] = in.tensor("prompts")[i];
      } else if (!torch::equal(it->second, in.tensor("prompts")[i])) {
        log_->failure = "two prompts share uid " + uid;
      }
    }
    if (rank() == 0) {
      std::lock_guard<std::mutex> lock(log_->mutex);
      log_->update_uids.push_back(uids);
    }
    ++version_;
    const double adv_mean = in.tensor("advantages").abs().mean().item<double>();
    DataProto out;
    out.meta_info["metrics"] = {{"actor/pg_loss", {adv_mean, adv_mean}}, {"actor/lr", {1e-3}},
                                {"actor/grad_norm", {0.5 + version_}}};
    return out;
  }

  std::shared_ptr<CallLog> log_;
  std::string role_;
  int64_t response_length_;
  std::mt19937_64 rng_;
  int version_ = 0;
};

class FakeCriticWorker : public Worker {
 public:
  FakeCriticWorker(const WorkerContext& context, std::shared_ptr<CallLog> log) : Worker(context), log_(std::move(log)) {
    auto reg = [this](const std::string& name, Dispatch dispatch, Method method) {
      MethodSpec spec;
      spec.name = name;
      spec.dispatch = dispatch;
      register_method(spec, [this, name, method](const DataProto& in) {
        log_->record(rank(), "critic." + name);
        return method(in);
      });
    };
    reg("init_model", Dispatch::OneToAll, [this](const DataProto& in) {
      std::lock_guard<std::mutex> lock(log_->mutex);
      if (rank() == 0) log_->init_meta["critic"] = in.meta_info;
      return DataProto();
    });
    reg("compute_values", Dispatch::DpComputeProto, [this](const DataProto& in) {
      torch::Tensor mask = in.tensor("response_mask").to(torch::kFloat32);
      return DataProto::from_dict({{"values", (0.05f * version_) * mask}});
    });
    reg("update_critic", Dispatch::DpComputeProto, [this](const DataProto& in) {
      if (!in.has_tensor("returns")) log_->failure = "update_critic without returns";
      ++version_;
      DataProto out;
      out.meta_info["metrics"] = {{"critic/vf_loss", {in.tensor("returns").mean().item<double>()}},
                                  {"critic/vpred_max", {1.0 * version_, 2.0 * version_}}};
      return out;
    });
    reg("save_checkpoint", Dispatch::OneToAll, [this](const DataProto& in) {
      save_state(in, rank(), {{"version", version_}});
      return DataProto();
    });
    reg("load_checkpoint", Dispatch::OneToAll, [this](const DataProto& in) {
      version_ = load_state(in, rank())["version"].get<int>();
      return DataProto();
    });
  }

 private:
  std::shared_ptr<CallLog> log_;
  int version_ = 0;
};

// Prompts "a,b:9,k" tokenised by the char tokenizer (+ "S"), left-padded to `prompt_length`; seeded shuffle
// per epoch; state {epoch, position}.
class FakePromptLoader : public trainer::PromptDataLoader {
 public:
  FakePromptLoader(int64_t num_prompts, int64_t batch_size, int64_t prompt_length, bool shuffle, uint64_t seed)
      : batch_size_(batch_size), prompt_length_(prompt_length), shuffle_(shuffle), seed_(seed) {
    for (int64_t i = 0; i < num_prompts; ++i) {
      const int a = static_cast<int>(i % 10), diff = static_cast<int>((i * 7) % 10), k = static_cast<int>(i % 4) + 1;
      prompts_.push_back(std::to_string(a) + "," + std::to_string((a + diff) % 9) + ":9," + std::to_string(k));
    }
  }
  int64_t batches_per_epoch() const override { return static_cast<int64_t>(prompts_.size()) / batch_size_; }
  void start_epoch(int64_t epoch) override {
    if (epoch != epoch_) {
      epoch_ = epoch;
      position_ = 0;
    }
    order_.resize(prompts_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
    if (shuffle_) std::shuffle(order_.begin(), order_.end(), std::mt19937_64(seed_ + static_cast<uint64_t>(epoch)));
  }
  bool has_next() const override { return position_ < batches_per_epoch(); }
  DataProto next() override {
    std::vector<int64_t> rows(order_.begin() + position_ * batch_size_, order_.begin() + (position_ + 1) * batch_size_);
    ++position_;
    const int64_t n = static_cast<int64_t>(rows.size());
    torch::Tensor ids = torch::full({n, prompt_length_}, char_id('P'), torch::kInt64);
    torch::Tensor mask = torch::zeros({n, prompt_length_}, torch::kInt64);
    std::vector<nlohmann::json> sources, rm, index, raw_ids, messages;
    for (int64_t i = 0; i < n; ++i) {
      const std::string text = prompts_[static_cast<size_t>(rows[static_cast<size_t>(i)])] + "S";
      const int64_t start = prompt_length_ - static_cast<int64_t>(text.size());
      nlohmann::json raw = nlohmann::json::array();
      for (size_t c = 0; c < text.size(); ++c) {
        ids[i][start + static_cast<int64_t>(c)] = char_id(text[c]);
        mask[i][start + static_cast<int64_t>(c)] = 1;
        raw.push_back(char_id(text[c]));
      }
      sources.emplace_back("fake");
      rm.push_back({{"style", "rule"}, {"ground_truth", prompts_[static_cast<size_t>(rows[static_cast<size_t>(i)])]}});
      index.emplace_back(rows[static_cast<size_t>(i)]);
      raw_ids.push_back(raw);
      messages.push_back(nlohmann::json::array({{{"role", "user"}, {"content", text}}}));
    }
    torch::Tensor position_ids = torch::clamp(mask.cumsum(1) - 1, 0);
    return DataProto::from_dict({{"input_ids", ids}, {"attention_mask", mask}, {"position_ids", position_ids}},
                                {{"data_source", sources},
                                 {"reward_model", rm},
                                 {"index", index},
                                 {"raw_prompt_ids", raw_ids},
                                 {"raw_prompt", messages}});
  }
  nlohmann::json state_dict() const override { return {{"epoch", epoch_}, {"position", position_}}; }
  void load_state_dict(const nlohmann::json& state) override {
    epoch_ = state.at("epoch").get<int64_t>();
    position_ = state.at("position").get<int64_t>();
  }

 private:
  std::vector<std::string> prompts_;
  std::vector<int64_t> order_;
  int64_t batch_size_, prompt_length_;
  bool shuffle_;
  uint64_t seed_;
  int64_t epoch_ = -1, position_ = 0;
};

// Score = fraction of digit tokens among the response's R positions, on the last valid token; acc = score > 0.4.
inline trainer::RewardOutput fake_reward(const DataProto& batch) {
  // The trainer keeps the prompts' messages for the reward step (verl 0.9.1 scores where they are at hand).
  VERL_CHECK(batch.non_tensor_batch.count("raw_prompt") &&
                 batch.column("raw_prompt").size() == static_cast<size_t>(batch.size()),
             "test", "the reward step's batch has no raw_prompt column for every row");
  const torch::Tensor& responses = batch.tensor("responses");
  const torch::Tensor mask = batch.tensor("attention_mask").slice(1, -responses.size(1));
  const int64_t b = responses.size(0), r = responses.size(1);
  torch::Tensor reward = torch::zeros({b, r}, torch::kFloat32);
  std::vector<nlohmann::json> acc;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t length = mask[i].sum().item<int64_t>();
    int64_t digits = 0;
    for (int64_t t = 0; t < length; ++t) {
      const int64_t id = responses[i][t].item<int64_t>();
      digits += id >= 4 && id <= 13;
    }
    const float score = static_cast<float>(digits) / static_cast<float>(r);
    if (length > 0) reward[i][length - 1] = score;
    acc.emplace_back(score > 0.4f ? 1.0 : 0.0);
  }
  return trainer::RewardOutput{reward, {{"acc", acc}}};
}

// Karmarkar-Karp stand-in for the tests: greedy largest-first into the lightest part with room.
inline std::vector<std::vector<int64_t>> greedy_partitions(const std::vector<int64_t>& workloads, int64_t k,
                                                           bool equal_size) {
  std::vector<int64_t> order(workloads.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return workloads[static_cast<size_t>(a)] > workloads[static_cast<size_t>(b)];
  });
  const size_t cap = equal_size ? workloads.size() / static_cast<size_t>(k) : workloads.size();
  std::vector<std::vector<int64_t>> parts(static_cast<size_t>(k));
  std::vector<int64_t> sums(static_cast<size_t>(k), 0);
  for (int64_t row : order) {
    size_t best = parts.size();
    for (size_t p = 0; p < parts.size(); ++p) {
      if (parts[p].size() < cap && (best == parts.size() || sums[p] < sums[best])) best = p;
    }
    parts[best].push_back(row);
    sums[best] += workloads[static_cast<size_t>(row)];
  }
  return parts;
}

}  // namespace verl::test
