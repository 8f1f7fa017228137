// Tests of the run configuration: defaults, presets, file and flag precedence, every
// user error's message, and the range checks of zt_config_validate.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "test.h"

// Parses a NULL-terminated list of flags: PARSE(&cfg, "--steps", "10").
#define PARSE(cfg, ...) parse_list((cfg), (char *[]){__VA_ARGS__, NULL})
#define PARSE_NONE(cfg) parse_list((cfg), (char *[]){NULL})

static zt_status parse_list(zt_config *cfg, char **argv) {
    int argc = 0;
    while (argv[argc]) argc++;
    return zt_config_parse(cfg, argc, argv);
}

// Writes `text` to a fresh file under /tmp; its name goes to `path` (>= 32 bytes).
// The caller unlinks it.
static int write_tmp(char *path, const char *text) {
    strcpy(path, "/tmp/zt_cfg_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    close(fd);
    return ok ? 0 : -1;
}

static int msg_has(const char *needle) {
    if (strstr(zt_error_message(), needle)) return 1;
    fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", zt_error_message(), needle);
    return 0;
}

// The parse fails and its message names `key`.
#define CHECK_PARSE_ERR(key, ...)                                     \
    do {                                                              \
        zt_config c_;                                                 \
        CHECK_EQ_INT(PARSE(&c_, __VA_ARGS__), ZT_ERR);                \
        CHECK(msg_has(key));                                          \
    } while (0)

// Parsing a config file holding `json` fails and the message names `key`.
#define CHECK_FILE_ERR(json, key)                                     \
    do {                                                              \
        char p_[32];                                                  \
        CHECK(write_tmp(p_, json) == 0);                              \
        zt_config c_;                                                 \
        zt_status s_ = PARSE(&c_, "--config", p_);                    \
        unlink(p_);                                                   \
        CHECK_EQ_INT(s_, ZT_ERR);                                     \
        CHECK(msg_has(key));                                          \
    } while (0)

ZT_TEST(config_defaults) {
    zt_config c;
    CHECK_EQ_INT(PARSE_NONE(&c), ZT_OK);
    CHECK(strcmp(c.model, "tiny") == 0);
    CHECK_EQ_INT(c.n_layer, 4);
    CHECK_EQ_INT(c.n_head, 4);
    CHECK_EQ_INT(c.n_embd, 128);
    CHECK_EQ_INT(c.vocab, 256);
    CHECK_EQ_INT(c.n_ctx, 256);
    CHECK_EQ_INT(c.micro_batch, 8);
    CHECK_EQ_INT(c.seq, 128);
    CHECK_EQ_INT(c.grad_accum, 1);
    CHECK_EQ_INT(c.steps, 200);
    CHECK(c.optim == ZT_OPTIM_ADAMW);
    // Floats compare to the float nearest the decimal default: exact.
    CHECK(c.lr == 6e-4f);
    CHECK(c.lr_final_frac == 0.1f);
    CHECK(c.lr_schedule == ZT_LR_COSINE);
    CHECK_EQ_INT(c.warmup, 20);
    CHECK(c.weight_decay == 0.1f);
    CHECK(c.beta1 == 0.9f);
    CHECK(c.beta2 == 0.95f);
    CHECK(c.eps == 1e-8f);
    CHECK(c.grad_clip == 1.0f);
    CHECK(c.seed == 1337);
    CHECK(strcmp(c.data, "") == 0);
    CHECK(strcmp(c.val_data, "") == 0);
    CHECK_EQ_INT(c.val_every, 50);
    CHECK_EQ_INT(c.val_batches, 0);
    CHECK_EQ_INT(c.shuffle, 0);
    CHECK(strcmp(c.init_from, "") == 0);
    CHECK(strcmp(c.log, "") == 0);
    CHECK_EQ_INT(c.zero, 0);
    CHECK_EQ_INT(c.dp, 0);
    CHECK_EQ_INT(c.pp, 1);
    CHECK_EQ_INT(c.tp, 1);
    CHECK(c.schedule == ZT_SCHED_1F1B);
    CHECK(strcmp(c.partition, "uniform") == 0);
    CHECK_EQ_INT(c.loss_chunk, 0);
    CHECK_EQ_INT(c.threads, 0);
    CHECK_EQ_INT(zt_config_validate(&c), ZT_OK);
    return ZT_PASS;
}

ZT_TEST(config_presets) {
    static const struct {
        const char *name;
        int L, NH, C, V, T;
    } want[] = {
        {"tiny", 4, 4, 128, 256, 256},        {"gpt2", 12, 12, 768, 50257, 1024},
        {"gpt2-medium", 24, 16, 1024, 50257, 1024}, {"gpt2-large", 36, 20, 1280, 50257, 1024},
        {"gpt2-xl", 48, 25, 1600, 50257, 1024},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        zt_config c;
        CHECK_EQ_INT(PARSE(&c, "--model", (char *)want[i].name), ZT_OK);
        CHECK_EQ_INT(c.n_layer, want[i].L);
        CHECK_EQ_INT(c.n_head, want[i].NH);
        CHECK_EQ_INT(c.n_embd, want[i].C);
        CHECK_EQ_INT(c.vocab, want[i].V);
        CHECK_EQ_INT(c.n_ctx, want[i].T);
        CHECK_EQ_INT(zt_config_validate(&c), ZT_OK);
    }
    return ZT_PASS;
}

ZT_TEST(config_shape) {
    zt_config c;
    CHECK_EQ_INT(PARSE(&c, "--model", "gpt2"), ZT_OK);
    zt_model_shape s = zt_config_shape(&c);
    CHECK_EQ_INT(s.vocab, 50257);
    CHECK_EQ_INT(s.padded_vocab, 50304); // 393 * 128
    CHECK_EQ_INT(s.n_ctx, 1024);
    CHECK_EQ_INT(s.n_layer, 12);
    CHECK_EQ_INT(s.n_head, 12);
    CHECK_EQ_INT(s.n_embd, 768);
    CHECK_EQ_INT(PARSE(&c, "--model", "gpt2", "--tp", "2"), ZT_OK);
    s = zt_config_shape(&c);
    CHECK_EQ_INT(s.padded_vocab, 50432); // 197 * 256
    CHECK_EQ_INT(s.padded_vocab, zt_padded_vocab(50257, 2));
    return ZT_PASS;
}

ZT_TEST(config_shape_key_overrides_preset_either_order) {
    zt_config a, b;
    CHECK_EQ_INT(PARSE(&a, "--n-layer", "2", "--model", "gpt2"), ZT_OK);
    CHECK_EQ_INT(PARSE(&b, "--model", "gpt2", "--n-layer", "2"), ZT_OK);
    CHECK_EQ_INT(a.n_layer, 2);
    CHECK_EQ_INT(b.n_layer, 2);
    CHECK_EQ_INT(a.n_head, 12);
    CHECK_EQ_INT(b.n_head, 12);
    CHECK_EQ_INT(a.n_embd, 768);
    CHECK_EQ_INT(a.vocab, 50257);

    // A shape key in the file survives a --model flag, and a model in the file yields
    // to a shape flag.
    char p[32];
    CHECK(write_tmp(p, "{\"n-embd\": 256, \"vocab\": 1000}") == 0);
    zt_status st = PARSE(&a, "--model", "gpt2", "--config", p);
    unlink(p);
    CHECK_EQ_INT(st, ZT_OK);
    CHECK_EQ_INT(a.n_embd, 256);
    CHECK_EQ_INT(a.vocab, 1000);
    CHECK_EQ_INT(a.n_layer, 12);
    CHECK(write_tmp(p, "{\"n-head\": 16, \"model\": \"gpt2-medium\"}") == 0);
    st = PARSE(&b, "--config", p, "--n-ctx", "512");
    unlink(p);
    CHECK_EQ_INT(st, ZT_OK);
    CHECK_EQ_INT(b.n_head, 16);
    CHECK_EQ_INT(b.n_ctx, 512);
    CHECK_EQ_INT(b.n_layer, 24);
    CHECK_EQ_INT(b.n_embd, 1024);
    return ZT_PASS;
}

ZT_TEST(config_flag_overrides_file) {
    char p[32];
    CHECK(write_tmp(p, "{\n  \"steps\": 10,\n  \"lr\": 0.001,\n  \"data\": \"a.bin\",\n"
                       "  \"shuffle\": true,\n  \"seed\": 42\n}\n") == 0);
    zt_config c;
    // The flag comes before --config and still wins.
    zt_status st = PARSE(&c, "--steps", "20", "--config", p, "--seed", "7");
    CHECK_EQ_INT(st, ZT_OK);
    CHECK_EQ_INT(c.steps, 20);
    CHECK(c.seed == 7);
    CHECK(c.lr == 0.001f);
    CHECK(strcmp(c.data, "a.bin") == 0);
    CHECK_EQ_INT(c.shuffle, 1);
    st = PARSE(&c, "--config", p, "--shuffle=false");
    unlink(p);
    CHECK_EQ_INT(st, ZT_OK);
    CHECK_EQ_INT(c.shuffle, 0);
    CHECK_EQ_INT(c.steps, 10);
    return ZT_PASS;
}

ZT_TEST(config_file_every_type) {
    char p[32];
    CHECK(write_tmp(p, "{\"model\": \"gpt2\", \"micro-batch\": 4, \"lr\": 3e-4, "
                       "\"seed\": 9007199254740992, \"shuffle\": false, "
                       "\"partition\": \"0:7,7:14\", \"optim\": \"adamw8bit\", "
                       "\"weight-decay\": 0, \"steps\": 6}") == 0);
    zt_config c;
    zt_status st = PARSE(&c, "--config", p);
    unlink(p);
    CHECK_EQ_INT(st, ZT_OK);
    CHECK_EQ_INT(c.micro_batch, 4);
    CHECK(c.lr == 3e-4f);
    CHECK(c.seed == 9007199254740992ull);
    CHECK_EQ_INT(c.shuffle, 0);
    CHECK(strcmp(c.partition, "0:7,7:14") == 0);
    CHECK(c.optim == ZT_OPTIM_ADAMW8BIT);
    CHECK(c.weight_decay == 0.0f);
    CHECK_EQ_INT(c.steps, 6);
    CHECK_EQ_INT(c.n_layer, 12);
    CHECK_EQ_INT(zt_config_validate(&c), ZT_OK);
    return ZT_PASS;
}

ZT_TEST(config_equals_form_and_last_wins) {
    zt_config c;
    CHECK_EQ_INT(PARSE(&c, "--steps=30", "--lr=1e-3", "--partition=type:embed:2|transformer:1",
                       "--data=a=b.bin", "--seed=18446744073709551615"),
                 ZT_OK);
    CHECK_EQ_INT(c.steps, 30);
    CHECK(c.lr == 1e-3f);
    CHECK(strcmp(c.partition, "type:embed:2|transformer:1") == 0);
    CHECK(strcmp(c.data, "a=b.bin") == 0); // split at the first '=' only
    CHECK(c.seed == 18446744073709551615ull);
    CHECK_EQ_INT(PARSE(&c, "--steps", "1", "--steps=2", "--steps", "3"), ZT_OK);
    CHECK_EQ_INT(c.steps, 3);
    CHECK_EQ_INT(PARSE(&c, "--log=a.jsonl", "--lr", "-1"), ZT_OK); // negative value, not a flag
    CHECK(strcmp(c.log, "a.jsonl") == 0);
    CHECK(c.lr == -1.0f);
    // an empty value is refused, never taken as "not given" (an unset shell variable)
    CHECK_EQ_INT(PARSE(&c, "--log="), ZT_ERR);
    CHECK(strstr(zt_error_message(), "--log is empty") != NULL);
    CHECK_EQ_INT(PARSE(&c, "--data", ""), ZT_ERR);
    return ZT_PASS;
}

// The runtime knobs are options whose defaults are environment variables: a flag overrides
// the variable, the MPI backend's parser reads the texts and names the flag (or, for a bad
// variable, the variable), and a bad ZT_CUDA_ATTENTION is refused by its name. The caller's
// environment is restored.
static int env_default_cases(void) {
    zt_config c;
    zt_comm_mpi_settings cs;
    CHECK_EQ_INT(PARSE_NONE(&c), ZT_OK); // the built-in defaults
    CHECK(!strcmp(c.comm_algo, "stage") && !strcmp(c.comm_timeout, "auto"));
    CHECK_EQ_INT(c.cuda_attention, ZT_CUDA_ATTENTION_AUTO);
    setenv("ZT_COMM_MPI_ALGO", "mpi", 1), setenv("ZT_COMM_TIMEOUT_S", "7", 1);
    setenv("ZT_CUDA_ATTENTION", "rows", 1);
    CHECK_EQ_INT(PARSE_NONE(&c), ZT_OK);
    CHECK(!strcmp(c.comm_algo, "mpi") && !strcmp(c.comm_timeout, "7"));
    CHECK_EQ_INT(c.cuda_attention, ZT_CUDA_ATTENTION_ROWS);
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_OK);
    CHECK(cs.algo == ZT_COMM_MPI_ALGO_MPI && cs.timeout_s == 7 && !cs.timeout_auto);
    CHECK_EQ_INT(PARSE(&c, "--comm-algo", "stage-all", "--comm-timeout", "auto",
                       "--cuda-attention", "blocked"), ZT_OK);
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_OK);
    CHECK(cs.algo == ZT_COMM_MPI_ALGO_STAGE_ALL && cs.timeout_auto);
    CHECK_EQ_INT(c.cuda_attention, ZT_CUDA_ATTENTION_BLOCKED);
    CHECK_EQ_INT(PARSE(&c, "--cuda-attention", "flash"), ZT_OK);
    CHECK_EQ_INT(c.cuda_attention, ZT_CUDA_ATTENTION_FLASH);
    // the texts go to comm's parser
    CHECK_EQ_INT(PARSE(&c, "--comm-algo", "stage", "--comm-stage-kib", "2"), ZT_OK);
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_ERR);
    CHECK(msg_has("--comm-stage-kib=2: give a whole number of KiB"));
    setenv("ZT_COMM_MPI_ALGO", "bogus", 1);
    CHECK_EQ_INT(PARSE_NONE(&c), ZT_OK);
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_ERR);
    CHECK(msg_has("ZT_COMM_MPI_ALGO=bogus: use stage"));
    CHECK_EQ_INT(PARSE(&c, "--comm-algo", "mpi"), ZT_OK); // the flag replaces the bad variable
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_OK);
    CHECK(cs.algo == ZT_COMM_MPI_ALGO_MPI);
    CHECK_EQ_INT(PARSE(&c, "--comm-timeout", "soon"), ZT_OK);
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_ERR); // the first bad one: the variable
    setenv("ZT_COMM_MPI_ALGO", "stage", 1);
    CHECK_EQ_INT(PARSE(&c, "--comm-timeout", "soon"), ZT_OK);
    CHECK_EQ_INT(zt_config_comm_settings(&c, &cs), ZT_ERR);
    CHECK(msg_has("--comm-timeout=soon: give the seconds"));
    setenv("ZT_CUDA_ATTENTION", "fast", 1);
    CHECK_EQ_INT(PARSE_NONE(&c), ZT_ERR);
    CHECK(msg_has("ZT_CUDA_ATTENTION") && msg_has("blocked, rows"));
    return ZT_PASS;
}

ZT_TEST(config_env_defaults) {
    enum { N = ZT_COMM_N_SETTINGS + 1 };
    const char *vars[N] = {"ZT_CUDA_ATTENTION"};
    for (int k = 0; k < ZT_COMM_N_SETTINGS; k++) vars[k + 1] = zt_comm_mpi_env_names[k];
    char *saved[N];
    for (int i = 0; i < N; i++) {
        const char *v = getenv(vars[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(vars[i]);
    }
    int rc = env_default_cases();
    for (int i = 0; i < N; i++) {
        if (saved[i]) setenv(vars[i], saved[i], 1);
        else unsetenv(vars[i]);
        free(saved[i]);
    }
    return rc;
}

ZT_TEST(config_bool_forms) {
    zt_config c;
    CHECK_EQ_INT(PARSE(&c, "--shuffle"), ZT_OK);
    CHECK_EQ_INT(c.shuffle, 1);
    // A bare bool flag does not swallow the next flag.
    CHECK_EQ_INT(PARSE(&c, "--shuffle", "--steps", "3"), ZT_OK);
    CHECK_EQ_INT(c.shuffle, 1);
    CHECK_EQ_INT(c.steps, 3);
    CHECK_EQ_INT(PARSE(&c, "--shuffle", "--shuffle=false"), ZT_OK);
    CHECK_EQ_INT(c.shuffle, 0);
    CHECK_EQ_INT(PARSE(&c, "--shuffle=1"), ZT_OK);
    CHECK_EQ_INT(c.shuffle, 1);
    CHECK_EQ_INT(PARSE(&c, "--shuffle=0"), ZT_OK);
    CHECK_EQ_INT(c.shuffle, 0);
    CHECK_EQ_INT(PARSE(&c, "--shuffle=true"), ZT_OK);
    CHECK_EQ_INT(c.shuffle, 1);
    CHECK_PARSE_ERR("shuffle", "--shuffle=yes");
    // `--shuffle false` is a likely slip: the message says to write --shuffle=false.
    CHECK_PARSE_ERR("--shuffle=false", "--shuffle", "false");
    return ZT_PASS;
}

ZT_TEST(config_err_unknown_flag) {
    CHECK_PARSE_ERR("unknown option --micro-bach; did you mean --micro-batch?", "--micro-bach",
                    "4");
    CHECK_PARSE_ERR("did you mean --micro-batch?", "--micro-bach=4");
    CHECK_PARSE_ERR("did you mean --config?", "--confg", "x.json");
    CHECK_PARSE_ERR("zzzzzzzzzz", "--zzzzzzzzzz");
    CHECK(!strstr(zt_error_message(), "did you mean"));
    // Too short to guess at: "--q" is not "corrected" to "--dp".
    CHECK_PARSE_ERR("--q", "--q", "1");
    CHECK(!strstr(zt_error_message(), "did you mean"));
    // An unknown flag anywhere fails even when its neighbours are fine.
    CHECK_PARSE_ERR("--stepz", "--steps", "3", "--stepz", "4");
    return ZT_PASS;
}

ZT_TEST(config_err_missing_value) {
    CHECK_PARSE_ERR("--lr", "--lr");
    CHECK_PARSE_ERR("missing its value", "--steps", "3", "--lr");
    CHECK_PARSE_ERR("--data", "--data", "--steps", "3");
    CHECK_PARSE_ERR("--config", "--config");
    CHECK_PARSE_ERR("--config", "--config=");
    return ZT_PASS;
}

ZT_TEST(config_err_malformed_number) {
    CHECK_PARSE_ERR("--lr", "--lr", "abc");
    CHECK_PARSE_ERR("--lr", "--lr", "1e-3x");
    CHECK_PARSE_ERR("--steps", "--steps", "10x");
    CHECK(msg_has("'x'"));
    CHECK_PARSE_ERR("--steps", "--steps", "1.5");
    CHECK_PARSE_ERR("--steps", "--steps", "");
    CHECK_PARSE_ERR("--steps", "--steps=");
    CHECK_PARSE_ERR("--steps", "--steps", " 10");
    CHECK_PARSE_ERR("--steps", "--steps", "99999999999");
    CHECK_PARSE_ERR("--seed", "--seed", "-1");
    CHECK_PARSE_ERR("--seed", "--seed", "18446744073709551616");
    CHECK_PARSE_ERR("--lr", "--lr", "inf");
    CHECK_PARSE_ERR("--lr", "--lr", "nan");
    CHECK_PARSE_ERR("--lr", "--lr", "1e39"); // beyond FLT_MAX
    return ZT_PASS;
}

ZT_TEST(config_err_string_too_long) {
    char big[ZT_PATH_MAX + 10];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_PARSE_ERR("data", "--data", big);
    CHECK_PARSE_ERR("optim", "--optim", "adamw-with-a-very-long-name");
    // Exactly the capacity (511 characters + NUL) fits.
    big[ZT_PATH_MAX - 1] = '\0';
    zt_config c;
    CHECK_EQ_INT(PARSE(&c, "--data", big), ZT_OK);
    CHECK_EQ_INT((int)strlen(c.data), ZT_PATH_MAX - 1);
    CHECK_FILE_ERR("{\"model\": \"a-model-name-that-is-far-too-long-for-it\"}", "model");
    return ZT_PASS;
}

ZT_TEST(config_err_positional) {
    CHECK_PARSE_ERR("'train.bin'", "train.bin");
    CHECK_PARSE_ERR("'-s'", "-s", "3");
    CHECK_PARSE_ERR("'--'", "--");
    CHECK_PARSE_ERR("'7'", "--steps", "3", "7");
    CHECK_PARSE_ERR("--help", "--steps", "3", "--help");
    CHECK(!strstr(zt_error_message(), "did you mean"));
    CHECK_PARSE_ERR("-h", "-h");
    return ZT_PASS;
}

ZT_TEST(config_err_unknown_preset) {
    CHECK_PARSE_ERR("gpt3", "--model", "gpt3");
    CHECK(msg_has("--model"));
    CHECK(msg_has("gpt2-xl")); // lists the valid names
    CHECK(msg_has("tiny"));
    return ZT_PASS;
}

ZT_TEST(config_err_file_missing_or_unreadable) {
    CHECK_PARSE_ERR("/tmp/zt_no_such_config.json", "--config", "/tmp/zt_no_such_config.json");
    CHECK(msg_has("No such file"));
    CHECK_PARSE_ERR("/tmp", "--config", "/tmp"); // a directory opens but cannot be read
    CHECK(msg_has("cannot read"));
    return ZT_PASS;
}

ZT_TEST(config_err_file_bad_json) {
    char p[32];
    CHECK(write_tmp(p, "{\n  \"steps\": 10,\n  \"lr\": ,\n  \"seq\": 64\n}\n") == 0);
    zt_config c;
    zt_status st = PARSE(&c, "--config", p);
    unlink(p);
    CHECK_EQ_INT(st, ZT_ERR);
    CHECK(msg_has(p));
    CHECK(msg_has("not valid JSON"));
    CHECK(msg_has("line 3"));
    CHECK_FILE_ERR("", "is empty");
    CHECK_FILE_ERR("{\"steps\": 5, \"lr\": 1e-3, \"steps\": 6}", "key \"steps\" appears twice");
    CHECK_FILE_ERR(" \n\t\n", "is empty");
    CHECK_FILE_ERR("{\"steps\": 10} trailing", "not valid JSON");
    CHECK_FILE_ERR("{\"steps\": 10,}", "not valid JSON");
    return ZT_PASS;
}

ZT_TEST(config_err_file_not_object) {
    CHECK_FILE_ERR("[1, 2]", "object");
    CHECK_FILE_ERR("42", "object");
    CHECK_FILE_ERR("\"steps\"", "object");
    return ZT_PASS;
}

ZT_TEST(config_err_file_unknown_key) {
    CHECK_FILE_ERR("{\"micro_batch\": 4}", "\"micro_batch\"");
    CHECK(msg_has("did you mean \"micro-batch\"?"));
    CHECK_FILE_ERR("{\"totally-unrelated\": 4}", "\"totally-unrelated\"");
    CHECK(!strstr(zt_error_message(), "did you mean"));
    CHECK_FILE_ERR("{\"config\": \"other.json\"}", "\"config\"");
    return ZT_PASS;
}

ZT_TEST(config_err_file_wrong_type) {
    CHECK_FILE_ERR("{\"micro-batch\": \"8\"}", "\"micro-batch\"");
    CHECK(msg_has("integer"));
    CHECK_FILE_ERR("{\"steps\": 1.5}", "\"steps\"");
    CHECK_FILE_ERR("{\"steps\": 1e12}", "\"steps\"");
    CHECK_FILE_ERR("{\"lr\": \"6e-4\"}", "\"lr\"");
    CHECK_FILE_ERR("{\"lr\": null}", "\"lr\"");
    CHECK_FILE_ERR("{\"lr\": 1e39}", "\"lr\"");
    CHECK_FILE_ERR("{\"shuffle\": 1}", "\"shuffle\"");
    CHECK_FILE_ERR("{\"shuffle\": \"true\"}", "\"shuffle\"");
    CHECK_FILE_ERR("{\"data\": 5}", "\"data\"");
    CHECK_FILE_ERR("{\"data\": [\"a.bin\"]}", "\"data\"");
    CHECK_FILE_ERR("{\"seed\": -1}", "\"seed\"");
    CHECK_FILE_ERR("{\"seed\": 1e300}", "\"seed\"");
    CHECK_FILE_ERR("{\"tp\": {\"n\": 2}}", "\"tp\"");
    // an enum option takes one of its names, as a string
    CHECK_FILE_ERR("{\"optim\": \"sgd\"}",
                   "\"optim\" 'sgd' is not known: use one of adamw, adamw8bit");
    CHECK_FILE_ERR("{\"overlap-comm\": true}", "\"overlap-comm\" must be a string");
    return ZT_PASS;
}

// zt_config_validate fails on `stmt` applied to a valid config, naming `key`.
#define CHECK_INVALID(stmt, key)                                   \
    do {                                                           \
        zt_config c_ = base;                                       \
        zt_config *c = &c_;                                        \
        stmt;                                                      \
        CHECK_EQ_INT(zt_config_validate(c), ZT_ERR);               \
        CHECK(msg_has(key));                                       \
    } while (0)

#define CHECK_VALID(stmt)                                          \
    do {                                                           \
        zt_config c_ = base;                                       \
        zt_config *c = &c_;                                        \
        stmt;                                                      \
        if (zt_config_validate(c) != ZT_OK) {                      \
            fprintf(stderr, "  %s: %s\n", #stmt, zt_error_message()); \
            return ZT_FAIL;                                        \
        }                                                          \
    } while (0)

ZT_TEST(config_validate_ranges) {
    zt_config base;
    CHECK_EQ_INT(PARSE_NONE(&base), ZT_OK);
    CHECK_INVALID(c->n_layer = 0, "n-layer");
    CHECK_INVALID(c->n_head = 0, "n-head");
    CHECK_INVALID(c->n_embd = -1, "n-embd");
    CHECK_INVALID(c->vocab = 0, "vocab");
    CHECK_INVALID(c->n_ctx = 0, "n-ctx");
    CHECK_INVALID((c->n_embd = 100, c->n_head = 3), "n_embd 100 is not divisible by n_head 3");
    CHECK_INVALID(c->vocab = (1 << 24) + 1, "vocab");
    CHECK_VALID(c->vocab = 250000); // multilingual heads train on uint16 token files too
    CHECK_INVALID(c->micro_batch = 0, "micro-batch");
    CHECK_INVALID(c->seq = 0, "seq");
    CHECK_INVALID(c->seq = 512, "--seq 512 exceeds the model's n_ctx 256");
    CHECK(msg_has("--n-ctx"));
    CHECK_VALID(c->seq = 256);
    CHECK_INVALID(c->grad_accum = 0, "grad-accum");
    CHECK_INVALID(c->steps = 0, "steps");
    CHECK_INVALID(c->lr = 0, "lr");
    CHECK_INVALID(c->lr = -1e-3f, "lr");
    CHECK_INVALID(c->lr = INFINITY, "lr");
    CHECK_INVALID(c->lr = NAN, "lr");
    CHECK_INVALID(c->lr_final_frac = -0.1f, "lr-final-frac");
    CHECK_INVALID(c->lr_final_frac = 1.5f, "lr-final-frac");
    CHECK_VALID((c->lr_final_frac = 0, c->lr_final_frac = 1));
    CHECK_INVALID(c->lr_schedule = (zt_lr_schedule)7, "lr-schedule");
    CHECK(msg_has("cosine"));
    CHECK_VALID(c->lr_schedule = ZT_LR_CONSTANT);
    CHECK_INVALID(c->warmup = -1, "warmup");
    CHECK_INVALID(c->weight_decay = -0.1f, "weight-decay");
    CHECK_INVALID(c->weight_decay = NAN, "weight-decay");
    CHECK_VALID(c->weight_decay = 0);
    CHECK_INVALID(c->beta1 = 1, "beta1");
    CHECK_INVALID(c->beta1 = -0.5f, "beta1");
    CHECK_INVALID(c->beta2 = 1, "beta2");
    CHECK_INVALID(c->beta2 = NAN, "beta2");
    CHECK_VALID((c->beta1 = 0, c->beta2 = 0));
    CHECK_INVALID(c->eps = 0, "eps");
    CHECK_INVALID(c->eps = INFINITY, "eps");
    CHECK_INVALID(c->grad_clip = -1, "grad-clip");
    CHECK_VALID(c->grad_clip = 0);
    CHECK_INVALID(c->optim = (zt_optim_kind)7, "optim");
    CHECK(msg_has("adamw8bit"));
    CHECK_VALID(c->optim = ZT_OPTIM_ADAMW8BIT);
    CHECK_INVALID(c->zero = 2, "zero");
    CHECK_INVALID(c->zero = -1, "zero");
    CHECK_VALID(c->zero = 1);
    CHECK_INVALID(c->pp = 0, "pp");
    CHECK_INVALID(c->tp = 0, "tp");
    CHECK_INVALID(c->dp = -1, "dp");
    CHECK_VALID(c->dp = 4);
    CHECK_INVALID(c->schedule = (zt_schedule_kind)7, "schedule");
    CHECK_VALID(c->schedule = ZT_SCHED_GPIPE);
    CHECK_INVALID(c->loss_chunk = -1, "loss-chunk");
    CHECK_INVALID(c->threads = -1, "threads");
    CHECK_INVALID(c->val_every = -1, "val-every");
    CHECK_VALID(c->val_every = 0);
    CHECK_INVALID(c->val_batches = -1, "val-batches");
    return ZT_PASS;
}

// Values that parse fine but do not fit together fail in validate, not in parse.
ZT_TEST(config_validate_after_parse) {
    zt_config c;
    CHECK_EQ_INT(PARSE(&c, "--seq", "512"), ZT_OK);
    CHECK_EQ_INT(zt_config_validate(&c), ZT_ERR);
    CHECK(msg_has("--seq 512 exceeds the model's n_ctx 256: lower --seq or raise --n-ctx"));
    CHECK_EQ_INT(PARSE(&c, "--seq", "512", "--n-ctx", "512"), ZT_OK);
    CHECK_EQ_INT(zt_config_validate(&c), ZT_OK);
    // an enum option's unknown name fails where it is read, listing the names it takes
    CHECK_EQ_INT(PARSE(&c, "--optim", "sgd"), ZT_ERR);
    CHECK(msg_has("--optim 'sgd' is not known: use one of adamw, adamw8bit"));
    return ZT_PASS;
}

// An enum option's names, as the program writes them elsewhere: the schedule's (the pipeline
// report, the checkpoint's layout) and the dtypes' (the checkpoint's "param_dtype").
ZT_TEST(config_enum_names) {
    for (int k = ZT_SCHED_1F1B; k <= ZT_SCHED_ZB_H1; k++)
        CHECK(strcmp(zt_config_enum_name("schedule", k), zt_schedule_kind_name(k)) == 0);
    CHECK(strcmp(zt_config_enum_name("param-dtype", ZT_BF16), "bf16") == 0);
    CHECK(strcmp(zt_config_enum_name("lr-schedule", ZT_LR_CONSTANT), "constant") == 0);
    CHECK(zt_config_enum_name("save-dtype", ZT_NOT_GIVEN) == NULL);
    return ZT_PASS;
}

ZT_TEST(config_help) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    zt_config_print_help(f);
    fclose(f);
    static const char *const want[] = {
        "  --micro-batch N        sequences per micro-batch (B) (default 8)\n",
        "--config FILE", "--model NAME", "--n-layer N", "(default from --model)",
        "--lr X", "(default 6e-4)", "--shuffle ", "(default false)", "--data PATH",
        "(not set by default)", "--optim NAME", "adamw | adamw8bit", "--threads N", "gpt2-xl",
        "\nparallel:\n", "--partition SPEC",
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(text, want[i])) {
            fprintf(stderr, "  help lacks \"%s\"\n", want[i]);
            ok = 0;
        }
    }
    // Every option of the struct appears: spot-check the ones most easily forgotten.
    const char *names[] = {"n-head", "n-embd", "vocab", "n-ctx", "seq", "grad-accum",
                           "steps", "lr-final-frac", "lr-schedule", "warmup", "weight-decay",
                           "beta1", "beta2", "eps", "grad-clip", "seed", "val-data",
                           "val-every", "val-batches", "init-from", "log", "zero", "dp",
                           "pp", "tp", "schedule", "loss-chunk"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char flag[32];
        snprintf(flag, sizeof flag, "  --%s ", names[i]);
        if (!strstr(text, flag)) {
            fprintf(stderr, "  help lacks \"%s\"\n", flag);
            ok = 0;
        }
    }
    if (!ok) fputs(text, stderr);
    free(text);
    CHECK(ok);
    return ZT_PASS;
}

// eval keeps the options it uses and resets the others (a --config shared with training).
ZT_TEST(config_keep_only) {
    zt_config c, d;
    CHECK_EQ_INT(PARSE(&c, "--steps", "0", "--lr", "0", "--log", "x.jsonl", "--seq", "32",
                       "--resume", "ck", "--n-layer", "3"),
                 ZT_OK);
    CHECK_EQ_INT(PARSE_NONE(&d), ZT_OK);
    static const char *const keep[] = {"seq", "resume", "model", "n-layer", "n-head", "n-embd",
                                       "vocab", "n-ctx", NULL};
    zt_config_keep_only(&c, keep);
    CHECK_EQ_INT(c.steps, d.steps);
    CHECK(c.lr == d.lr);
    CHECK(c.log[0] == 0);
    CHECK_EQ_INT(c.seq, 32);
    CHECK(strcmp(c.resume, "ck") == 0);
    CHECK_EQ_INT(c.n_layer, 3);
    CHECK(zt_config_validate(&c) == ZT_OK); // --steps 0 and --lr 0 are gone
    CHECK(zt_config_is_option("steps", 5) && zt_config_is_option("val-batches=", 11));
    CHECK(!zt_config_is_option("json", 4) && !zt_config_is_option("config", 6));
    return ZT_PASS;
}

// The log's configuration record: every option --help lists is a key, and the object with
// its nulls left out, given back as a --config file, is the same configuration (strings with
// a quote, a backslash and a tab included).
ZT_TEST(config_write_json_round_trip) {
    zt_config c, back;
    CHECK_EQ_INT(PARSE(&c, "--model", "gpt2", "--n-layer", "3", "--lr", "3e-4", "--seed",
                       "18446744073709551615", "--shuffle", "--log-every", "7", "--data",
                       "a \"q\" \\b\tc.bin", "--partition", "memory", "--eps", "1e-7",
                       "--optim", "adamw8bit", "--overlap-comm", "on", "--bf16-gemm", "fallback"),
                 ZT_OK);
    char *json = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&json, &n);
    zt_config_write_json(f, &c);
    fclose(f);
    cJSON *root = cJSON_Parse(json);
    CHECK(cJSON_IsObject(root));
    // every option of --help is a key
    char *help = NULL;
    f = open_memstream(&help, &n);
    zt_config_print_help(f);
    fclose(f);
    int keys = 0;
    for (const char *p = help; (p = strstr(p, "\n  --")); p += 5) {
        char name[64];
        if (sscanf(p + 5, "%63[a-z0-9-]", name) != 1 || strcmp(name, "config") == 0) continue;
        if (!cJSON_HasObjectItem(root, name)) fprintf(stderr, "  no key \"%s\"\n", name);
        CHECK(cJSON_HasObjectItem(root, name));
        keys++;
    }
    CHECK_EQ_INT(keys, cJSON_GetArraySize(root));
    CHECK(strstr(json, "\"lr\":0.0003,") && strstr(json, "\"eps\":1e-07,"));
    CHECK(strstr(json, "\"seed\":18446744073709551615,") && strstr(json, "\"save\":null"));
    // enum options by name; one not given (--save-dtype) is null, as an unset string
    CHECK(strstr(json, "\"optim\":\"adamw8bit\",") && strstr(json, "\"save-dtype\":null,"));
    CHECK(strstr(json, "\"overlap-comm\":\"on\",") && strstr(json, "\"bf16-gemm\":\"fallback\","));
    // without the nulls and the seed (a JSON config holds integers up to 2^53), as a file
    for (cJSON *it = root->child, *next; it; it = next) {
        next = it->next;
        if (cJSON_IsNull(it) || !strcmp(it->string, "seed")) cJSON_DeleteItemFromObject(root, it->string);
    }
    char *text = cJSON_PrintUnformatted(root), path[32];
    CHECK(write_tmp(path, text) == 0);
    zt_status st = PARSE(&back, "--config", path, "--seed", "18446744073709551615");
    unlink(path);
    CHECK_EQ_INT(st, ZT_OK);
    CHECK(zt_config_first_difference(&c, &back) == NULL);
    CHECK(strcmp(back.data, "a \"q\" \\b\tc.bin") == 0 && back.log_every == 7);
    cJSON_free(text);
    cJSON_Delete(root);
    free(json);
    free(help);
    return ZT_PASS;
}

// JSON that cJSON reads leniently and Python's json refuses: a leading zero (007 was taken
// as 7), "1." and a \u0000 in a key (applied as its prefix) are refused with the line and
// column; a --config that is not a file or a pipe (/dev/zero was read until out of
// memory) or larger than a config file can be is refused. -0, 0.5 and 1e-05 stay valid.
ZT_TEST(config_file_strict_json) {
    const char *bad[][2] = {{"{\"steps\": 007}", "leading zero"},
                            {"{\"steps\": -01}", "leading zero"},
                            {"{\"lr\": 1.}", "no digit after"},
                            {"{\"steps\\u0000x\": 3}", "\\u0000"},
                            {"{\"log\": \"a\\u0000b\"}", "\\u0000"}};
    char p[32];
    zt_config c;
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        CHECK(write_tmp(p, bad[k][0]) == 0);
        zt_status st = PARSE(&c, "--config", p);
        unlink(p);
        CHECK_EQ_INT(st, ZT_ERR);
        CHECK(strstr(zt_error_message(), bad[k][1]) != NULL);
        CHECK(strstr(zt_error_message(), "line 1, column") != NULL);
    }
    CHECK(write_tmp(p, "{\"steps\": 10, \"lr\": 0.5, \"weight-decay\": 1e-05, "
                       "\"log\": \"a\\\\u0000007.jsonl\", \"seed\": 0}") == 0);
    zt_status st = PARSE(&c, "--config", p);
    unlink(p);
    CHECK_EQ_INT(st, ZT_OK);
    CHECK(strcmp(c.log, "a\\u0000007.jsonl") == 0); // an escaped backslash, not an escape
    CHECK_EQ_INT(PARSE(&c, "--config", "/dev/zero"), ZT_ERR);
    CHECK(strstr(zt_error_message(), "not a regular file") != NULL);
    FILE *f = fopen("/tmp/zt_cfg_big.json", "w");
    CHECK(f != NULL);
    fputs("{\"steps\": 1", f);
    for (int i = 0; i < (1 << 20); i++) fputc(' ', f);
    fputs("}", f);
    fclose(f);
    st = PARSE(&c, "--config", "/tmp/zt_cfg_big.json");
    unlink("/tmp/zt_cfg_big.json");
    CHECK_EQ_INT(st, ZT_ERR);
    CHECK(strstr(zt_error_message(), "larger than") != NULL);
    return ZT_PASS;
}

// The log's strings (paths among them) stay valid JSON whatever bytes they hold: a path
// that is not UTF-8 made the log's first line invalid JSON. Each invalid byte is written as
// \udcXX (Python's surrogateescape); valid UTF-8 passes as it is, control bytes escaped.
ZT_TEST(json_string_not_utf8) {
    const char *in[] = {"plain/a.bin", "caf\xc3\xa9", "bad\xff\xfe.bin", "cut\xe2\x82",
                        "over\xc0\xaflong", "sur\xed\xa0\x80", "q\"b\\\n"};
    const char *want[] = {"\"plain/a.bin\"", "\"caf\xc3\xa9\"", "\"bad\\udcff\\udcfe.bin\"",
                          "\"cut\\udce2\\udc82\"", "\"over\\udcc0\\udcaflong\"",
                          "\"sur\\udced\\udca0\\udc80\"", "\"q\\\"b\\\\\\u000a\""};
    for (size_t k = 0; k < sizeof in / sizeof *in; k++) {
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        zt_json_string(f, in[k]);
        fclose(f);
        if (strcmp(buf, want[k]) != 0) printf("  got %s, want %s\n", buf, want[k]);
        CHECK(strcmp(buf, want[k]) == 0);
        free(buf);
    }
    return ZT_PASS;
}
