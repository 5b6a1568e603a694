// Roles, resource pools, dispatch modes and worker groups over the in-process transport.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <chrono>

#include "verl/common/error.h"
#include "verl/single_controller/resource_pool.h"
#include "verl/single_controller/role.h"
#include "verl/single_controller/worker_group.h"

namespace verl::single_controller {
namespace {

std::string worker_group_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// x = [0, 1, ..., n-1] as a column.
DataProto rows(int64_t n) { return DataProto::from_dict({{"x", torch::arange(n, torch::kInt64)}}); }

std::vector<int64_t> values(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous().to(torch::kInt64);
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// A worker whose outputs say which rank saw which rows.
class TagWorker : public Worker {
 public:
  explicit TagWorker(const WorkerContext& context) : Worker(context) {
    register_method({"tag", Dispatch::DpComputeProto}, [this](const DataProto& in) {
      DataProto out = DataProto::from_dict({{"x", in.tensor("x")},
                                            {"rank", torch::full({in.size()}, rank(), torch::kInt64)}});
      out.meta_info["metrics"] = {{"seen", in.size()}};
      return out;
    });
    register_method({"init", Dispatch::OneToAll}, [this](const DataProto& in) {
      ++init_calls;
      return DataProto::from_dict({}, {}, {{"rank", rank()}, {"rows", in.size()}});
    });
    register_method({"only_zero", Dispatch::OneToAll, Execute::RankZero}, [this](const DataProto&) {
      ++init_calls;
      return DataProto::from_dict({}, {}, {{"rank", rank()}});
    });
    register_method({"each", Dispatch::AllToAll}, [this](const DataProto& in) {
      return DataProto::from_dict({{"y", in.tensor("x") + 100 * rank()}});
    });
    register_method({"fail_on_rank_1", Dispatch::DpComputeProto}, [this](const DataProto& in) {
      VERL_CHECK(rank() != 1, "test", "rank 1 refuses");
      return in;
    });
    register_method({"nd", Dispatch::NdComputeProto, Execute::All, "actor"}, [this](const DataProto& in) {
      return DataProto::from_dict({{"x", in.tensor("x")}, {"rank", torch::full({in.size()}, rank(), torch::kInt64)}});
    });
    // 2 dp groups x 2 tp ranks: ranks 0,1 are dp 0 and ranks 2,3 dp 1; tp rank 0 collects.
    set_mesh_info("actor", MeshRankInfo{rank() / 2, rank() % 2 == 0});
  }
  int init_calls = 0;
};

std::shared_ptr<InProcessTransport> tag_transport(int world) {
  return std::make_shared<InProcessTransport>(
      "tag", world, [](const WorkerContext& c) { return std::make_unique<TagWorker>(c); });
}

TEST(Role, NamesAreVerls) {
  EXPECT_EQ(role_name(Role::ActorRollout), "actor_rollout");
  EXPECT_EQ(role_name(Role::RefPolicy), "ref");
  EXPECT_EQ(role_name(Role::RewardModel), "rm");
  EXPECT_EQ(parse_role("ActorRolloutRef"), Role::ActorRolloutRef);
  EXPECT_EQ(parse_role("critic"), Role::Critic);
  EXPECT_NE(worker_group_error_of([] { parse_role("critc"); }).find("expected one of"), std::string::npos);
}

TEST(ResourcePoolManager, LaysOutPoolsAndValidates) {
  ResourcePoolManager manager({{"global_pool", {2, 2}}, {"reward_pool", {1}}},
                              {{Role::ActorRollout, "global_pool"}, {Role::Critic, "global_pool"},
                               {Role::RewardModel, "reward_pool"}});
  EXPECT_EQ(manager.total_slots(), 5);
  EXPECT_EQ(manager.pool_for(Role::Critic).world_size(), 4);
  EXPECT_EQ(manager.pool_for(Role::RewardModel).first_slot, 4);
  EXPECT_EQ(manager.roles_on("global_pool").size(), 2u);
  // Slots 0..3 are global_pool's (two nodes of two), slot 4 is reward_pool's.
  EXPECT_EQ(manager.pool_index_of_slot(0), 0u);
  EXPECT_EQ(manager.pool_index_of_slot(3), 0u);
  EXPECT_EQ(manager.pool_index_of_slot(4), 1u);
  EXPECT_NE(worker_group_error_of([&] { manager.pool_index_of_slot(5); }).find("slot 5 is not in any resource pool"),
            std::string::npos);
  EXPECT_NE(worker_group_error_of([&] { manager.pool_for(Role::RefPolicy); }).find("'ref' is not mapped"),
            std::string::npos);

  EXPECT_NE(worker_group_error_of([] {
              ResourcePoolManager({{"p", {1}}}, {{Role::Actor, "q"}});
            }).find("unknown resource pool 'q'"),
            std::string::npos);
  EXPECT_NE(worker_group_error_of([] { ResourcePoolManager({{"p", {0}}}, {{Role::Actor, "p"}}); }).find("at least 1"),
            std::string::npos);
  EXPECT_NE(worker_group_error_of([] {
              ResourcePoolManager({{"p", {1}}, {"idle", {1}}}, {{Role::Actor, "p"}});
            }).find("'idle' has no role"),
            std::string::npos);
}

TEST(WorkerGroup, DpComputeProtoChunksContiguouslyAndRemovesPadding) {
  WorkerGroup group("tag", tag_transport(3));
  DataProto out = group.call("tag", rows(7));  // padded to 9: rows 0..6 then 0, 1
  EXPECT_EQ(values(out.tensor("x")), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(out.tensor("rank")), (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(out.meta_info["metrics"]["seen"], protocol::Json::array({3, 3, 3}));
}

TEST(WorkerGroup, OneToAllReachesEveryRankAndRankZeroOnlyRankZero) {
  auto transport = tag_transport(2);
  WorkerGroup group("tag", transport);
  DataProto out = group.call("init", rows(5));
  EXPECT_EQ(out.meta_info["rank"], 0);
  EXPECT_EQ(out.meta_info["rows"], 5);
  EXPECT_EQ(static_cast<TagWorker&>(transport->worker(0)).init_calls, 1);
  EXPECT_EQ(static_cast<TagWorker&>(transport->worker(1)).init_calls, 1);
  group.call("only_zero");
  EXPECT_EQ(static_cast<TagWorker&>(transport->worker(0)).init_calls, 2);
  EXPECT_EQ(static_cast<TagWorker&>(transport->worker(1)).init_calls, 1);
}

TEST(WorkerGroup, AllToAllIsPerRank) {
  WorkerGroup group("tag", tag_transport(2));
  auto outs = group.call_each("each", {rows(2), rows(3)});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(values(outs[0].tensor("y")), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(values(outs[1].tensor("y")), (std::vector<int64_t>{100, 101, 102}));
  EXPECT_NE(worker_group_error_of([&] { group.call("each", rows(2)); }).find("one input per rank"), std::string::npos);
}

TEST(WorkerGroup, NdDispatchSendsOneChunkPerDpRankAndCollectsFromTpZero) {
  WorkerGroup group("tag", tag_transport(4));
  DataProto out = group.call("nd", rows(4));
  EXPECT_EQ(values(out.tensor("x")), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values(out.tensor("rank")), (std::vector<int64_t>{0, 0, 2, 2}));
}

TEST(WorkerGroup, FailureNamesGroupRankAndMethod) {
  WorkerGroup group("tag", tag_transport(2));
  std::string message = worker_group_error_of([&] { group.call("fail_on_rank_1", rows(4)); });
  EXPECT_NE(message.find("worker group 'tag' rank 1 failed in 'fail_on_rank_1'"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 refuses"), std::string::npos) << message;
  EXPECT_NE(worker_group_error_of([&] { group.call("tga", rows(1)); }).find("has no method 'tga'"), std::string::npos);
}

// Two groups on separate transports overlap: the first call can only finish once the second has started.
class HandshakeWorker : public Worker {
 public:
  HandshakeWorker(const WorkerContext& context, std::shared_ptr<std::promise<void>> signal, bool waits)
      : Worker(context) {
    register_method({"step", Dispatch::OneToAll}, [signal, waits](const DataProto&) {
      if (waits) {
        auto status = signal->get_future().wait_for(std::chrono::seconds(20));
        VERL_CHECK(status == std::future_status::ready, "test", "the other group never ran concurrently");
      } else {
        signal->set_value();
      }
      return DataProto();
    });
  }
};

TEST(WorkerGroup, AsyncCallsOnDifferentGroupsOverlap) {
  auto signal = std::make_shared<std::promise<void>>();
  WorkerGroup waiting("critic", std::make_shared<InProcessTransport>("critic", 1, [signal](const WorkerContext& c) {
                        return std::make_unique<HandshakeWorker>(c, signal, true);
                      }));
  WorkerGroup releasing("actor", std::make_shared<InProcessTransport>("actor", 1, [signal](const WorkerContext& c) {
                          return std::make_unique<HandshakeWorker>(c, signal, false);
                        }));
  auto first = waiting.call_async("step");
  auto second = releasing.call_async("step");
  EXPECT_NO_THROW(first.get());
  EXPECT_NO_THROW(second.get());
}

// Co-located roles share one worker per slot and are reached through per-role views.
class CounterWorker : public Worker {
 public:
  CounterWorker(const WorkerContext& context, int step) : Worker(context) {
    register_method({"bump", Dispatch::OneToAll}, [this, step](const DataProto&) {
      count += step;
      return DataProto::from_dict({}, {}, {{"count", count}});
    });
  }
  int count = 0;
};

TEST(WorkerGroup, ColocatedRolesSpawnPerRoleViews) {
  auto factory = colocated_factory(
      {{"actor_rollout", [](const WorkerContext& c) { return std::make_unique<CounterWorker>(c, 1); }},
       {"critic", [](const WorkerContext& c) { return std::make_unique<CounterWorker>(c, 10); }}});
  auto transport = std::make_shared<InProcessTransport>("global_pool", 2, factory);
  WorkerGroup pool("global_pool", transport);
  auto views = pool.spawn({"actor_rollout", "critic"});
  EXPECT_EQ(views.at("actor_rollout").call("bump").meta_info["count"], 1);
  EXPECT_EQ(views.at("actor_rollout").call("bump").meta_info["count"], 2);
  EXPECT_EQ(views.at("critic").call("bump").meta_info["count"], 10);
  EXPECT_EQ(pool.call("critic_bump").meta_info["count"], 20);
  auto& colocated = static_cast<ColocatedWorker&>(transport->worker(1));
  EXPECT_EQ(static_cast<CounterWorker&>(colocated.role_worker("critic")).count, 20);
  EXPECT_NE(worker_group_error_of([&] { pool.spawn({"ref"}); }).find("hosts no role 'ref'"), std::string::npos);
  EXPECT_NE(worker_group_error_of([&] { views.at("critic").call("update"); }).find("methods: bump"), std::string::npos);
}

// ---- an uneven batch with non-tensor columns over several slots, metric-only dispatch, nd padding ----

// Per row: y = 10 * x + rank, uid + "@" + rank; metrics: rows seen and two loss values per rank.
class EchoWorker : public Worker {
 public:
  explicit EchoWorker(const WorkerContext& context) : Worker(context) {
    register_method({"echo", Dispatch::DpComputeProto}, [this](const DataProto& in) {
      std::vector<protocol::Json> uids;
      for (const auto& uid : in.column("uid")) uids.push_back(uid.get<std::string>() + "@" + std::to_string(rank()));
      DataProto out = DataProto::from_dict({{"y", in.tensor("x") * 10 + rank()}}, {{"uid", uids}});
      out.meta_info["metrics"] = {{"rows", in.size()}, {"loss", protocol::Json::array({rank(), rank() + 0.5})}};
      return out;
    });
    register_method({"metric", Dispatch::DpComputeMetric}, [this](const DataProto& in) {
      DataProto out;
      out.meta_info["metrics"] = {{"seen", in.size()}, {"first", in.tensor("x")[0].item<int64_t>()}};
      return out;
    });
  }
};

TEST(WorkerGroup, UnevenBatchOverFourSlotsComesBackInOrderWithColumnsAndMergedMetrics) {
  WorkerGroup group("echo", std::make_shared<InProcessTransport>(
                                "echo", 4, [](const WorkerContext& c) { return std::make_unique<EchoWorker>(c); }));
  std::vector<protocol::Json> uids;
  for (int i = 0; i < 10; ++i) uids.push_back("u" + std::to_string(i));
  DataProto batch = DataProto::from_dict({{"x", torch::arange(10, torch::kInt64)}}, {{"uid", uids}});
  // 10 rows padded to 12 (rows 0, 1 appended), 3 per slot; the padding is removed from the result.
  DataProto out = group.call("echo", batch);
  ASSERT_EQ(out.size(), 10);
  EXPECT_EQ(values(out.tensor("y")), (std::vector<int64_t>{0, 10, 20, 31, 41, 51, 62, 72, 82, 93}));
  std::vector<std::string> got;
  for (const auto& uid : out.column("uid")) got.push_back(uid.get<std::string>());
  EXPECT_EQ(got, (std::vector<std::string>{"u0@0", "u1@0", "u2@0", "u3@1", "u4@1", "u5@1", "u6@2", "u7@2", "u8@2",
                                           "u9@3"}));
  EXPECT_EQ(out.meta_info["metrics"]["rows"], protocol::Json::array({3, 3, 3, 3}));
  EXPECT_EQ(out.meta_info["metrics"]["loss"], protocol::Json::array({0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5}));
  // The input is untouched and call_async gives the same answer.
  EXPECT_EQ(batch.size(), 10);
  DataProto async_out = group.call_async("echo", batch).get();
  EXPECT_TRUE(torch::equal(async_out.tensor("y"), out.tensor("y")));
  // Metric-only dispatch: no rows come back, metrics from every slot in rank order.
  DataProto metrics = group.call("metric", DataProto::from_dict({{"x", torch::arange(6, torch::kInt64)}}));
  EXPECT_EQ(metrics.size(), 0);
  EXPECT_EQ(metrics.meta_info["metrics"]["seen"], protocol::Json::array({2, 2, 2, 2}));  // 6 padded to 8
  EXPECT_EQ(metrics.meta_info["metrics"]["first"], protocol::Json::array({0, 2, 4, 0}));
}

TEST(WorkerGroup, NdDispatchPadsAnUnevenBatchPerDpRank) {
  WorkerGroup group("tag", tag_transport(4));
  DataProto out = group.call("nd", rows(5));  // 2 dp ranks: padded to 6, 3 rows each, one padding row dropped
  EXPECT_EQ(values(out.tensor("x")), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(out.tensor("rank")), (std::vector<int64_t>{0, 0, 0, 2, 2}));
}

}  // namespace
}  // namespace verl::single_controller
