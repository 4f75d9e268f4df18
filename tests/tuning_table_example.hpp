#pragma once
// The valid tuning table that the schema-validation and fuzz tests start from, kept in one place so
// both mutate the same document: a measured entry with candidates (one of them failed), a hand-picked
// entry, inclusive ranges, and a second kernel.
namespace sagejit::test {

inline constexpr const char* example_table_text = R"({
  "schema": 1, "arch": "gfx1201",
  "kernels": {
    "attention": {
      "params": {"block_n": [32, 64], "rows_per_wave": [16, 32], "stages": [1, 2], "waves": [2, 4, 8]},
      "default": {"block_n": 32, "rows_per_wave": 32, "stages": 2, "waves": 4},
      "entries": [
        {"problem": {"dtype": "bf16", "head_dim": 128, "causal": false, "gqa_ratio": 1,
                     "seq_q": [1024, 65536], "seq_kv": [1024, 65536]},
         "config": {"block_n": 64, "rows_per_wave": 32, "stages": 2, "waves": 4},
         "measured": {"device": "NVIDIA H200", "date": "2026-11-30", "tool": "sagejit-autotune 0.1.0",
                      "time_us": 123.4, "tops": 456.7},
         "candidates": [{"config": {"block_n": 32, "rows_per_wave": 16, "stages": 1, "waves": 2}, "time_us": 150},
                        {"config": {"block_n": 64, "rows_per_wave": 16, "stages": 1, "waves": 8}, "time_us": null,
                         "reason": "failed the oracle"}]},
        {"problem": {"dtype": "fp16", "head_dim": 64, "causal": true, "seq_kv": [1, 512]},
         "config": {"block_n": 32, "rows_per_wave": 16, "stages": 1, "waves": 8},
         "measured": null, "reason": "carried over from the sm_90 table"}
      ]
    },
    "prepare": {"params": {"threads": [128, 256]}, "default": {"threads": 256}, "entries": []}
  }
})";

}  // namespace sagejit::test
