"""verl's multi-turn GSM8K preprocessing as the oracle for `verl data preprocess gsm8k_multiturn_w_tool|
gsm8k_multiturn_w_interaction` (tests/oracle/test_multiturn_data_oracle.cpp). Runs under the test-only Python
(.venv/test), offline.

  write VARIANT INPUT.jsonl SPLIT OUT.parquet   runs the process_fn of verl's
                                                examples/data_preprocess/gsm8k_multiturn_w_<VARIANT>.py
                                                (VARIANT: tool | interaction) through datasets' map(with_indices)
                                                and to_parquet, as the script does on the Hub's dataset

verl ships these scripts as examples, not as importable modules (they download the dataset when run), so
make_map_fn is restated here from verl 0.9.1's scripts, text for text; extract_solution is verl's
(verl.utils.reward_score.gsm8k has the same regex). The JSONL rows are the raw GSM8K rows (question, answer).
"""

import json
import os
import re
import sys

import datasets

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def extract_solution(solution_str):
    solution = re.search("#### (\\-?[0-9\\.\\,]+)", solution_str)
    assert solution is not None
    final_solution = solution.group(0)
    final_solution = final_solution.split("#### ")[1].replace(",", "")
    return final_solution


data_source = "openai/gsm8k"
instruction_following = "Let's think step by step and output the final answer after `####`."


def make_map_fn_tool(split):
    def process_fn(example, idx):
        question_raw = example.pop("question")

        question = question_raw + " " + instruction_following

        answer_raw = example.pop("answer")
        solution = extract_solution(answer_raw)
        data = {
            "data_source": data_source,
            "prompt": [
                {
                    "role": "system",
                    "content": (
                        "You are a math expert. You are given a question and you need to solve it step by step. "
                        "Reasoning step by step before any tool call. "
                        "You should use the `calc_gsm8k_reward` tool after step by step solving the question, "
                        "before generate final answer at least once and refine your answer if necessary. "
                        "Put your final answer in the format of `#### <answer>`."
                    ),
                },
                {
                    "role": "user",
                    "content": question,
                },
            ],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": solution},
            "extra_info": {
                "split": split,
                "index": idx,
                "answer": answer_raw,
                "question": question_raw,
                "need_tools_kwargs": True,
                "tools_kwargs": {
                    "calc_gsm8k_reward": {
                        "create_kwargs": {"ground_truth": solution},
                    },
                },
                "interaction_kwargs": {
                    "query": question,
                    "ground_truth": solution,
                },
            },
        }
        return data

    return process_fn


def make_map_fn_interaction(split):
    def process_fn(example, idx):
        question_raw = example.pop("question")

        question = question_raw + " " + instruction_following

        answer_raw = example.pop("answer")
        solution = extract_solution(answer_raw)
        data = {
            "data_source": data_source,
            "prompt": [
                {
                    "role": "system",
                    "content": (
                        "You are a math expert. You are given a question and you need to solve it step by step. "
                        "You should rethinking carefully if user point out your answer is wrong. "
                        "Put your final answer in the format of `#### <answer>`."
                    ),
                },
                {
                    "role": "user",
                    "content": question,
                },
            ],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": solution},
            "extra_info": {
                "split": split,
                "index": idx,
                "answer": answer_raw,
                "question": question_raw,
                "interaction_kwargs": {
                    "name": "gsm8k",
                    "query": question,
                    "ground_truth": solution,
                },
            },
        }
        return data

    return process_fn


def main(argv):
    if len(argv) != 6 or argv[1] != "write" or argv[2] not in ("tool", "interaction"):
        sys.exit(__doc__)
    _, _, variant, input_path, split, out_path = argv
    datasets.disable_progress_bars()
    with open(input_path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    dataset = datasets.Dataset.from_list(rows)  # in memory: no cache files
    make_map_fn = make_map_fn_tool if variant == "tool" else make_map_fn_interaction
    dataset = dataset.map(function=make_map_fn(split), with_indices=True)
    dataset.to_parquet(out_path)


if __name__ == "__main__":
    main(sys.argv)
