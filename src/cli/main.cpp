// The `verl` binary: everything else lives in verl_lib.
#include "verl/cli/cli.h"

int main(int argc, char** argv) { return verl::cli::main_entry(argc, argv); }
