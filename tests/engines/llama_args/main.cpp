// Runs llama.cpp's own argument parser (common/arg.cpp common_params_parse) on argv as
// llama-server does, and prints what it set: "threads N batch M hw H" or "refused".
// The thread count starts at UNSET, which the parser keeps when no -t is given (its own
// default, common_cpu_get_num_math(), is only applied to a value below 0), so the default
// is told apart from a count the argv set.
#include "arg.h"
#include "common.h"
#include <cstdio>
#include <thread>
int main(int argc, char ** argv) {
    const int UNSET = 77777;
    common_params params;
    params.cpuparams.n_threads = UNSET;
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_SERVER)) {
        printf("refused\n");
        return 0;
    }
    printf("threads %d batch %d hw %u unset %d\n", params.cpuparams.n_threads,
           params.cpuparams_batch.n_threads, std::thread::hardware_concurrency(), UNSET);
    return 0;
}
