// A chat template is user code (issue 25): `verl chat-template` with a template that loops for ever or builds a
// string of gigabytes must end with exit code 1 and one `error:` line naming the template's file and the limit,
// in bounded time and memory. Commands run under `timeout` (a hang fails the test instead of holding it) and an
// address-space limit (code that allocates the hostile size fails instead of taking the machine's memory).
// With chat_template.cpp's limits perturbed (time limit 0, memory budget SIZE_MAX) the loop and both memory tests
// failed (the loop then ended in 4 s on the address-space limit's bare MemoryError, not on the time limit).
#include <gtest/gtest.h>

#include <chrono>

#include "support/char_tokenizer.h"
#include "support/run_command.h"

namespace verl::test {
namespace {

// A char tokenizer folder whose chat template is `jinja` (chat_template.jinja overrides tokenizer_config's).
std::string tokenizer_with_template(const std::string& dir, const std::string& jinja) {
  write_char_tokenizer(dir + "/tok");
  write_file(dir + "/tok/chat_template.jinja", jinja);
  write_file(dir + "/messages.json", R"([{"role": "user", "content": "1+2"}])");
  return dir + "/tok";
}

// Runs `verl chat-template` under `ulimit -v` (KiB) and a 120 s `timeout`; returns the result and the seconds.
std::pair<CommandResult, double> render(const std::string& dir, const std::string& flags, long memory_kib) {
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = run_command("(ulimit -v " + std::to_string(memory_kib) + "; timeout -s KILL 120 " +
                                verl_binary() + " chat-template --tokenizer " + dir + "/tok --messages " + dir +
                                "/messages.json " + flags + ")");
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

void expect_one_error_line(const CommandResult& r, const std::vector<std::string>& expected) {
  EXPECT_EQ(r.exit_code, 1) << "stdout: " << r.out.substr(0, 200) << "\nstderr: " << r.err.substr(0, 500);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err.substr(0, 500);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err.substr(0, 500);
  for (const auto& text : expected) EXPECT_NE(r.err.find(text), std::string::npos) << text << " not in: " << r.err;
}

constexpr long k4GiB = 4L << 20;  // KiB

TEST(ChatTemplateLimits, ALoopWithoutEndStopsAtTheTimeLimit) {
  const std::string dir = make_temp_dir("template_limits");
  // The sandbox caps one range() at 100000 items; nested, they run for days.
  tokenizer_with_template(dir, "{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}"
                               "{% endfor %}");
  auto [r, seconds] = render(dir, "--timeout 2", k4GiB);
  expect_one_error_line(r, {"chat template from '" + dir + "/tok/chat_template.jinja'", "did not return within 2 s",
                            "(--timeout)"});
  EXPECT_LT(seconds, 30) << r.err;
}

TEST(ChatTemplateLimits, TimeoutZeroTurnsTheLimitOffAndANegativeOneIsAUsageError) {
  const std::string dir = make_temp_dir("template_limits");
  tokenizer_with_template(dir, "{{ messages[0]['content'] }}");
  auto [r, seconds] = render(dir, "--timeout 0", k4GiB);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1+2");
  auto [bad, unused] = render(dir, "--timeout -1", k4GiB);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--timeout expects a number of seconds >= 0, got '-1'"), std::string::npos) << bad.err;
}

TEST(ChatTemplateLimits, AHugeStringIsAMemoryErrorNamingTheTemplate) {
  const std::string dir = make_temp_dir("template_limits");
  tokenizer_with_template(dir, "{{ 'x' * 10**10 }}");
  auto [r, seconds] = render(dir, "", k4GiB);
  expect_one_error_line(r, {"chat template from '" + dir + "/tok/chat_template.jinja'",
                            "needed more than 1024 MiB of memory"});
}

// A string doubled 30 times (1 GiB, 1.5 GiB held at the end) fits the address space given, so only the
// rendering's own bound stops it.
TEST(ChatTemplateLimits, MemoryPastOneGibibyteIsAnErrorEvenWhereTheMachineHasIt) {
  const std::string dir = make_temp_dir("template_limits");
  tokenizer_with_template(dir, "{% set ns = namespace(s='x') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}"
                               "{% endfor %}{{ ns.s | length }}");
  auto [r, seconds] = render(dir, "", 8L << 20);
  expect_one_error_line(r, {"chat template from '" + dir + "/tok/chat_template.jinja'",
                            "needed more than 1024 MiB of memory"});
}

TEST(ChatTemplateLimits, ATemplateWithinTheLimitsStillRenders) {
  const std::string dir = make_temp_dir("template_limits");
  // 2^20 characters, built by doubling: well within the bound.
  tokenizer_with_template(dir, "{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}"
                               "{% endfor %}{{ ns.s | length }}");
  auto [r, seconds] = render(dir, "--timeout 30", k4GiB);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1048576");
}

}  // namespace
}  // namespace verl::test
