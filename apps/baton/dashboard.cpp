// baton dashboard [PATHS...] [--port 8080] [--host 127.0.0.1] [--token TOKEN] [--allow-host NAME]...
#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "baton/dashboard/dashboard.h"
#include "commands.h"

namespace baton::cli {
namespace {

int run_dashboard(DashboardOptions options) {
  // Ctrl-C and SIGTERM end the server: blocked here (the server's threads inherit the mask) and
  // waited for below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    Dashboard dashboard(std::move(options));
    std::printf("baton dashboard: %s  (read-only; Ctrl-C stops it)\n", dashboard.url().c_str());
    std::fflush(stdout);
    for (const auto& p : dashboard.problems()) std::fprintf(stderr, "baton dashboard: %s\n", p.c_str());
    int signal = 0;
    sigwait(&signals, &signal);
    std::printf("baton dashboard: stopped\n");
    return 0;
  } catch (const DashboardError& e) {
    std::fprintf(stderr, "baton dashboard: %s\n", e.what());
    return kBadInput;
  }
}

}  // namespace

void add_dashboard(CLI::App& app) {
  auto options = std::make_shared<DashboardOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dashboard", "a web page of runs and searches, live: run directories, folders of them, search storages");
  cmd->add_option("paths", options->paths(), "run directories, folders of runs, search storages (default: runs)");
  cmd->add_option("--port", options->port(), "the port to listen on (default 8080; 0: any free port)");
  cmd->add_option("--host", options->host(), "the address to listen on (default 127.0.0.1; another needs --token)");
  cmd->add_option("--token", options->token(), "a secret the page and /api/ need (?token=...)");
  cmd->add_option("--allow-host", options->allowed_hosts(),
                  "a host name the page may be opened under besides localhost and the listening address "
                  "(repeatable; others are refused, against DNS rebinding)");
  cmd->callback([options] {
    if (options->paths().empty()) options->paths({"runs"});
    const int code = run_dashboard(*options);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace baton::cli
