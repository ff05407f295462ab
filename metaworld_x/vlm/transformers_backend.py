"""Any transformers image-text-to-text model as an expert scorer (SmolVLM, Qwen2.5-VL, LLaVA, ...)."""

import hashlib
import json
import logging
import re
import warnings
from pathlib import Path

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.experts.catalog import ExpertCatalog, as_catalog
from metaworld_x.vlm.scores import (
    MAX_SCORE,
    ExpertScores,
    PriorFallbackWarning,
    check_frame,
    fallback_scores,
    uniform_scores,
)

logger = logging.getLogger(__name__)

LOGLIK_PROMPT = (
    "You choose which skill a humanoid robot should use next.\n"
    "Task: {task}\n"
    "Skills:\n{experts}\n"
    "Which skill should the robot use now? Answer with the skill's name only."
)
GENERATE_PROMPT = (
    "You choose which skill a humanoid robot should use next.\n"
    "Task: {task}\n"
    "Skills:\n{experts}\n"
    "Rate how useful each skill is for the task right now, from 0 (useless) to 10 (exactly right)."
    " Answer with one line per skill in the form `name: score`."
)
MODES = ("loglik", "generate")


def expert_list(catalog: ExpertCatalog) -> str:
    """The numbered `1. name: description` lines a prompt lists."""
    return "\n".join(f"{i}. {expert.line}" for i, expert in enumerate(catalog.experts, start=1))


def parse_scores(answer: str, names: tuple[str, ...]) -> dict[str, float]:
    """Pull `name: score` pairs (0-10) out of a generated answer; experts it cannot find are left out.

    Tolerates numbering, markdown, `=`/`-` separators, `7/10`, and spaces or
    hyphens for underscores. A number outside [0, 10] is not a score.
    """
    found = {}
    # Longest names first, so that `reach_two_hands` is not read as a `reach...` prefix match.
    for name in sorted(names, key=len, reverse=True):
        spelled = r"[\s_\-]*".join(re.escape(part) for part in name.split("_"))
        pattern = rf"(?<![A-Za-z0-9_]){spelled}(?![A-Za-z0-9_])[\s\*`'\"]*[:=\-–]?\s*(\d+(?:\.\d+)?)(?:\s*/\s*10)?"
        match = re.search(pattern, answer, flags=re.IGNORECASE)
        if match:
            value = float(match.group(1))
            if 0.0 <= value <= MAX_SCORE:
                found[name] = value
    return found


def loglik_to_scores(loglik: np.ndarray) -> np.ndarray:
    """[K] answer log-likelihoods -> [K] scores: 10 for the likeliest, one point less per nat, floored at 0.

    With temperature 1 the prior is then exactly the model's distribution over
    the expert names, restricted to the catalog (for gaps under 10 nats).
    """
    return np.clip(MAX_SCORE + loglik - np.max(loglik), 0.0, MAX_SCORE)


class TransformersVLM:
    """Scores experts with a vision-language model from transformers, on a rendered frame.

    Loads `AutoProcessor` and `AutoModelForImageTextToText` from a local folder
    or a hub id (`trust_remote_code=False` unless asked). The prompt holds the
    frame, the task and the numbered expert list.

    mode="loglik" (default): teacher-forced log-likelihood of each expert's name
    as the answer. The frame and prompt run once; the names then run as one
    batch on copies of the prompt's KV cache (`share_prompt`); see
    `loglik_to_scores`. mode="generate": greedy generation of a
    `name: score` line per expert, parsed by `parse_scores`; an answer that
    misses experts falls back to the log-likelihood scores with a warning.

    Scoring never raises: a runtime error gives a uniform prior with a warning
    and `fallback_reason` set (and `transient=True`, so it is not cached).
    """

    sees_image = True

    def __init__(
        self,
        model: str | Path,
        *,
        mode: str = "loglik",
        temperature: float = 1.0,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 10,
        max_new_tokens: int | None = None,
        trust_remote_code: bool = False,
        processor_kwargs: dict | None = None,
        share_prompt: bool = True,
        per_token: bool = False,
    ):
        """model: a local folder or hub id; dtype: a torch dtype name or "auto".

        processor_kwargs: extra arguments for every processor call, e.g.
        `{"do_image_splitting": False}` to keep SmolVLM from tiling a frame into
        many sub-images (much faster on a CPU).
        share_prompt: encode the frame and prompt once and score the answers on
        copies of its KV cache; False (or a model that cannot) runs one full
        row per expert instead.
        per_token: score names by mean log-likelihood per token instead of the
        total; the total (the name's probability) penalises names that are many
        tokens long, which matters for a weak model, not for one that copies
        names from the list.
        """
        if mode not in MODES:
            raise UserError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not temperature > 0:
            raise UserError(f"temperature must be > 0, got {temperature}")
        if batch_size < 1:
            raise UserError(f"batch_size must be >= 1, got {batch_size}")
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.model_id = str(model)
        self.mode = mode
        self.temperature = float(temperature)
        self.batch_size = int(batch_size)
        self.max_new_tokens = max_new_tokens
        self.processor_kwargs = dict(processor_kwargs or {})
        self.share_prompt = share_prompt
        self.per_token = per_token
        self.source = f"vlm:{Path(self.model_id).name or self.model_id}"
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype, None)
        if torch_dtype is None:
            raise UserError(f"unknown dtype {dtype!r}; use e.g. float32, bfloat16 or auto")
        try:
            self.processor = AutoProcessor.from_pretrained(self.model_id, trust_remote_code=trust_remote_code)
            self.model = AutoModelForImageTextToText.from_pretrained(
                self.model_id, dtype=torch_dtype, trust_remote_code=trust_remote_code
            )
        except (OSError, ValueError, ImportError) as error:
            raise UserError(
                f"cannot load the VLM {self.model_id!r} as an image-text-to-text model: {error}."
                " Give a local folder holding the model and its processor (no network is used when"
                " HF_HUB_OFFLINE=1), or pass trust_remote_code=True for a model that needs its own code"
            ) from None
        self.model.to(device).eval()
        self.device = device
        config = json.dumps(self.model.config.to_dict(), sort_keys=True, default=str)
        self.config_hash = hashlib.sha256(config.encode()).hexdigest()
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def identity(self) -> dict:
        return {
            "kind": "transformers",
            "model": self.model_id,
            "config_sha256": self.config_hash,
            "mode": self.mode,
            # generate mode falls back to log-likelihood scores, so both prompts shape its labels
            "prompts": [LOGLIK_PROMPT] if self.mode == "loglik" else [GENERATE_PROMPT, LOGLIK_PROMPT],
            "temperature": self.temperature,
            "processor_kwargs": self.processor_kwargs,
            "per_token": self.per_token,
        }

    # -- prompt -----------------------------------------------------------------

    def prompt(self, template: str, task: str, catalog: ExpertCatalog, with_image: bool) -> str:
        """The full model input text, through the processor's chat template where it has one."""
        text = template.format(task=task.strip(), experts=expert_list(catalog))
        if getattr(self.processor, "chat_template", None):
            content = ([{"type": "image"}] if with_image else []) + [{"type": "text", "text": text}]
            return self.processor.apply_chat_template(
                [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
            )
        image_token = getattr(self.processor, "image_token", "<image>")
        return (f"{image_token}\n" if with_image else "") + f"{text}\nAnswer:"

    def _encode(self, texts: list[str], frame: np.ndarray | None):
        """Tokenise texts (each with the frame, if any), right-padded, as tensors on the device."""
        kwargs = {**self.processor_kwargs, "text": texts, "return_tensors": "pt", "padding": True}
        side = self.tokenizer.padding_side
        # Right padding keeps every row's position ids the same as unpadded.
        self.tokenizer.padding_side = "right"
        try:
            if frame is None:
                encoded = self.processor(**kwargs)
            else:
                from PIL import Image

                image = Image.fromarray(frame)
                try:
                    encoded = self.processor(images=[image] * len(texts), **kwargs)
                except ValueError:
                    # Idefics-family processors (SmolVLM) want one list of images per text.
                    encoded = self.processor(images=[[image] for _ in texts], **kwargs)
        finally:
            self.tokenizer.padding_side = side
        try:
            # Pixel values come as float32; a bfloat16 model needs them in its own dtype.
            return encoded.to(self.device, dtype=self.model.dtype)
        except TypeError:  # a text-only BatchEncoding moves but does not cast
            return encoded.to(self.device)

    # -- scoring ----------------------------------------------------------------

    def answer_loglik(self, frame: np.ndarray | None, task: str, catalog: ExpertCatalog) -> np.ndarray:
        """[K] log-likelihood of each expert's name as the answer, teacher-forced."""
        prompt = self.prompt(LOGLIK_PROMPT, task, catalog, frame is not None)
        answers = [("" if prompt[-1:].isspace() else " ") + name for name in catalog.names]
        if not self.share_prompt:
            return self._loglik_full_rows(frame, prompt, answers)
        try:
            return self._loglik_shared_prompt(frame, prompt, answers)
        except Exception:
            # Some architectures cannot continue from a repeated cache. If full rows
            # work (an error there propagates), use them from now on.
            loglik = self._loglik_full_rows(frame, prompt, answers)
            logger.warning(
                "%s: scoring from a shared prompt cache failed; scoring full rows", self.source, exc_info=True
            )
            self.share_prompt = False
            return loglik

    def _loglik_shared_prompt(self, frame, prompt: str, answers: list[str]) -> np.ndarray:
        """Run the prompt (and frame) once, then all answers as a batch on copies of its KV cache."""
        import copy

        import torch

        prompt_ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        tails = []
        for answer in answers:
            ids = self.tokenizer(prompt + answer, add_special_tokens=False)["input_ids"]
            start = _common_prefix(prompt_ids, ids)
            if start < len(prompt_ids) or start == len(ids):
                raise RuntimeError(f"the answer {answer!r} does not tokenise as a continuation of the prompt")
            tails.append(ids[start:])
        encoded = self._encode([prompt], frame)
        with torch.inference_mode():
            # Only the last position's logits are needed: a [P, vocab] block is hundreds of MB.
            head = self.model(**encoded, use_cache=True, logits_to_keep=1)
            first = torch.log_softmax(head.logits[0, -1].float(), dim=-1)
            loglik = []
            for start in range(0, len(tails), self.batch_size):
                chunk = tails[start : start + self.batch_size]
                width = max(map(len, chunk))
                pad = self.tokenizer.pad_token_id or 0
                ids = torch.tensor([t + [pad] * (width - len(t)) for t in chunk], device=self.device)
                tail_mask = torch.tensor([[1] * len(t) + [0] * (width - len(t)) for t in chunk], device=self.device)
                mask = torch.cat([encoded["attention_mask"].expand(len(chunk), -1), tail_mask], dim=1)
                cache = copy.deepcopy(head.cache)
                cache.batch_repeat_interleave(len(chunk))
                logits = self.model(input_ids=ids, attention_mask=mask, cache=cache).logits
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                for row, tail in enumerate(chunk):
                    total = first[tail[0]]
                    if len(tail) > 1:
                        targets = torch.tensor(tail[1:], device=self.device)[:, None]
                        total = total + logprobs[row, : len(tail) - 1].gather(1, targets).sum()
                    loglik.append(float(total) / (len(tail) if self.per_token else 1))
        return np.asarray(loglik)

    def _loglik_full_rows(self, frame, prompt: str, answers: list[str]) -> np.ndarray:
        """Run prompt + answer as one row per expert (the frame repeated per row), `batch_size` rows a pass."""
        import torch

        prompt_ids = self._encode([prompt], frame)["input_ids"][0].tolist()
        loglik = []
        for start in range(0, len(answers), self.batch_size):
            chunk = answers[start : start + self.batch_size]
            encoded = self._encode([prompt + answer for answer in chunk], frame)
            with torch.inference_mode():
                logits = self.model(**encoded).logits.float()
            logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
            ids = encoded["input_ids"]
            lengths = encoded["attention_mask"].sum(dim=1).tolist()
            for row, length in enumerate(lengths):
                begin = _common_prefix(prompt_ids, ids[row, :length].tolist())
                if not 0 < begin < length:
                    raise RuntimeError(f"the answer {chunk[row]!r} added no tokens to the prompt")
                targets = ids[row, begin:length]
                total = float(logprobs[row, begin - 1 : length - 1].gather(1, targets[:, None]).sum())
                loglik.append(total / (len(targets) if self.per_token else 1))
        return np.asarray(loglik)

    def generate_answer(self, frame: np.ndarray | None, task: str, catalog: ExpertCatalog) -> str:
        """Greedy answer to the rating prompt."""
        import torch

        encoded = self._encode([self.prompt(GENERATE_PROMPT, task, catalog, frame is not None)], frame)
        max_new = self.max_new_tokens or 12 * len(catalog)
        with torch.inference_mode():
            output = self.model.generate(
                **encoded, max_new_tokens=max_new, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
            )
        new_tokens = output[:, encoded["input_ids"].shape[1] :]
        return self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)[0]

    def score(self, frame, task: str, experts=None) -> ExpertScores:
        """0-10 scores and prior for `task` seen in `frame` (uint8 [H, W, 3] or None)."""
        catalog = as_catalog(experts)
        frame = check_frame(frame)
        if not task or not task.strip():
            return fallback_scores(catalog, "empty instruction", self.temperature, self.source)
        try:
            if self.mode == "generate":
                return self._score_generated(frame, task, catalog)
            scores = loglik_to_scores(self.answer_loglik(frame, task, catalog))
            return ExpertScores.from_scores(catalog.names, scores, self.temperature, source=self.source)
        except Exception as error:  # a label must never stop training
            logger.debug("VLM scoring failed", exc_info=True)
            return uniform_scores(
                catalog,
                f"scorer error: {type(error).__name__}: {error}",
                self.temperature,
                self.source,
                transient=True,
            )

    def _score_generated(self, frame, task: str, catalog: ExpertCatalog) -> ExpertScores:
        answer = self.generate_answer(frame, task, catalog)
        parsed = parse_scores(answer, catalog.names)
        if len(parsed) == len(catalog):
            scores = [parsed[name] for name in catalog.names]
            return ExpertScores.from_scores(catalog.names, scores, self.temperature, source=self.source)
        missing = [name for name in catalog.names if name not in parsed]
        reason = (
            f"unparseable answer (no score for {', '.join(missing)}): {answer[:80]!r};"
            " used the answer log-likelihood scores instead"
        )
        warnings.warn(f"{self.source}: {reason}", PriorFallbackWarning, stacklevel=3)
        scores = loglik_to_scores(self.answer_loglik(frame, task, catalog))
        return ExpertScores.from_scores(
            catalog.names, scores, self.temperature, source=self.source, fallback_reason=reason
        )


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
