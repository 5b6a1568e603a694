// Chat templates rendered from several threads at once as the process's first renderings (ctest runs each test in a
// process of its own, so this one sets the embedded Jinja2 renderer up): the setup runs Python, which gives up the GIL
// midway (imports), and a thread that waited for it while holding the GIL deadlocked (two SFT ranks on threads
// building their datasets hung so). Every thread must get its text, within a minute.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer_builder.h"

namespace verl::test {
namespace {

TEST(ChatTemplateThreads, FirstRenderingsFromEightThreadsAtOnceAllFinish) {
  constexpr int kThreads = 8;
  std::vector<std::string> texts(kThreads);
  std::vector<std::string> errors(kThreads);
  std::promise<void> all_done;
  auto done = all_done.get_future();
  std::thread runner([&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        try {
          tokenizer::ChatTemplateInputs inputs;
          inputs.messages =
              nlohmann::ordered_json::array({{{"role", "user"}, {"content", "thread " + std::to_string(t)}}});
          inputs.add_generation_prompt = true;
          texts[static_cast<size_t>(t)] =
              tokenizer::render_chat_template(tokenizer::chatml_template(), inputs, nlohmann::ordered_json::object());
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(t)] = e.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    all_done.set_value();
  });
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    // Deadlocked threads cannot be joined: end the process with the reason rather than wait for ctest's timeout.
    std::cerr << "ChatTemplateThreads: the renderings did not finish in 60 s (deadlock)\n";
    std::_Exit(1);
  }
  runner.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[static_cast<size_t>(t)], "") << t;
    EXPECT_EQ(texts[static_cast<size_t>(t)],
              "<|im_start|>user\nthread " + std::to_string(t) + "<|im_end|>\n<|im_start|>assistant\n")
        << t;
  }
}

}  // namespace
}  // namespace verl::test
