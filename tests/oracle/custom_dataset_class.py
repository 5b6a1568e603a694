"""A custom dataset class in the form verl's recipes write them (recipe/retool/retool.py's CustomRLHFDataset): a
subclass of verl's own RLHFDataset that reads raw question / answer JSON Lines with HF datasets and maps them to
verl's columns, then lets verl's base class filter overlong prompts (with the tokenizer it was given) and build each
row dict; __getitem__ adds a system message to raw_prompt and its own tools_kwargs. Used by
tests/oracle/test_custom_dataset_oracle.cpp, run by verl.cpp (data.custom_cls) and by custom_dataset_oracle.py."""
import datasets

from verl.utils.dataset import RLHFDataset


def to_verl_row(example, index):
    return {"data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": example["question"] + " Put the answer after ####."}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": example["answer"].split("####")[-1].strip()},
            "extra_info": {"split": "test", "index": index, "question": example["question"]}}


class GsmDataset(RLHFDataset):
    def _read_files_and_tokenize(self):
        frames = [datasets.load_dataset("json", data_files=path, cache_dir=self.cache_dir)["train"]
                  for path in self.data_files]
        dataframe = datasets.concatenate_datasets(frames)
        if self.max_samples > 0:
            dataframe = dataframe.select(range(min(self.max_samples, len(dataframe))))
        dataframe = dataframe.map(to_verl_row, with_indices=True, remove_columns=dataframe.column_names)
        self.dataframe = self.maybe_filter_out_long_prompts(dataframe)

    def __getitem__(self, item):
        row = super().__getitem__(item)
        row["raw_prompt"] = [{"role": "system", "content": "You are a careful solver."}] + row["raw_prompt"]
        row["tools_kwargs"] = {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": row["reward_model"]["ground_truth"]}}}
        return row
