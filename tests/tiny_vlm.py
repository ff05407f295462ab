"""A tiny, randomly initialised LLaVA saved to a folder: a real transformers VLM for tests, built offline."""

import pytest

from metaworld_x.experts.catalog import DEFAULT_CATALOG


def save_tiny_vlm(path):
    """A LLaVA (CLIP vision + Llama text) with ~0.1M random weights and its processor, saved to `path`.

    Skips the calling test where transformers is not installed.
    """
    pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    words = sorted({w for name in DEFAULT_CATALOG.names for w in name.split("_")})
    words += "task skill skills which should use the robot answer user assistant name only now".split()
    words += ": . _ 0 1 2 3 4 5 6 7 8 9 10".split()
    special = ["<unk>", "<pad>", "<s>", "</s>", "<image>"]
    vocab = {token: i for i, token in enumerate(dict.fromkeys(special + words))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    chat_template = (
        "{% for m in messages %}user :{% for c in m['content'] %}"
        "{% if c['type'] == 'image' %} <image>{% else %} {{ c['text'] }}{% endif %}{% endfor %}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant :{% endif %}"
    )
    processor = LlavaProcessor(
        image_processor=LlavaImageProcessorPil(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}),
        tokenizer=tokenizer,
        patch_size=4,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's class token, dropped by the "default" strategy
        chat_template=chat_template,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            image_size=16,
            patch_size=4,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
        ),
        text_config=LlamaConfig(
            vocab_size=len(vocab),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=512,
            pad_token_id=vocab["<pad>"],
            bos_token_id=vocab["<s>"],
            eos_token_id=vocab["</s>"],
        ),
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(path)
    processor.save_pretrained(path)
    return path
