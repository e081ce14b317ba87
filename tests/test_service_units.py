"""Service pieces that need no server: settings, page lists, the GPU worker layout."""

from __future__ import annotations

import argparse
import os

import pytest

from service.app import ApiError, parse_pages
from service.pool import WorkerPool
from service.server import add_arguments, settings_from_args
from service.settings import Settings


def test_settings_env_then_overrides() -> None:
    env = {"ROI_PORT": "9001", "ROI_WORKERS": "3", "ROI_MAX_BODY_MB": "5", "ROI_DEBUG": "true"}
    s = Settings.load(env, workers=4, port=None)
    assert (s.port, s.workers, s.max_body_bytes, s.debug) == (9001, 4, 5 * 1024 * 1024, True)
    assert s.worker_count == 4 and s.worker_threads >= 1
    assert '"port": 9001' in s.describe()


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"ROI_PORT": "x"}, "port"),
        ({"ROI_DEVICES": "gpu:0"}, "devices"),
        ({"ROI_BATCH_MAX_SIZE": "0"}, "batch_max_size"),
        ({"ROI_LOG_LEVEL": "loud"}, "log_level"),
        ({"ROI_CPU_RUNTIME": "tflite"}, "cpu_runtime"),
    ],
)
def test_settings_errors_name_the_setting(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Settings.load(env)


def test_gpu_layout_pins_each_worker_to_one_device() -> None:
    s = Settings.load({}, devices="cuda:0, cuda:3", workers_per_device=2, workers=7)
    assert s.uses_gpu and s.worker_count == 4  # workers is for CPU only
    assert [s.device_for(i) for i in range(4)] == ["cuda:0", "cuda:0", "cuda:3", "cuda:3"]
    configs = [_pool(s)._config(i)[0] for i in range(4)]
    assert [c.env["CUDA_VISIBLE_DEVICES"] for c in configs] == ["0", "0", "3", "3"]
    assert {c.provider for c in configs} == {"cuda"}
    config, device = _pool(Settings.load({}, workers=2))._config(0)
    assert device == "cpu" and config.provider == "cpu" and "CUDA_VISIBLE_DEVICES" not in config.env


def test_the_cpu_runtime_reaches_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker's recogniser reads ``ROI_CPU_RUNTIME`` from the environment it is given; a
    runtime whose package is missing stops the service before any worker starts."""
    assert _pool(Settings.load({}))._config(0)[0].env["ROI_CPU_RUNTIME"] == "auto"
    s = Settings.load({"ROI_CPU_RUNTIME": "onnxruntime"})
    assert _pool(s)._config(0)[0].env["ROI_CPU_RUNTIME"] == "onnxruntime"
    from extractor.engines import openvino_runtime

    monkeypatch.setattr(openvino_runtime, "openvino_installed", lambda: False)
    with pytest.raises(ValueError, match=r"(?s)cpu_runtime.*pip install 'openvino"):
        Settings.load({"ROI_CPU_RUNTIME": "openvino"})


def test_tensorrt_reaches_the_gpu_workers(tmp_path) -> None:
    s = Settings.load(
        {"ROI_DEVICES": "cuda:1", "ROI_GPU_PROVIDER": "tensorrt"}, trt_cache_dir=str(tmp_path)
    )
    config, device = _pool(s)._config(0)
    assert device == "cuda:1" and config.env["CUDA_VISIBLE_DEVICES"] == "1"
    assert config.provider == "tensorrt" and config.trt_cache_dir == str(tmp_path)
    assert _pool(Settings.load({}, devices="cuda:0"))._config(0)[0].provider == "cuda"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = ["--device", "cuda:0", "--gpu-provider", "tensorrt", "--trt-cache-dir", "/x"]
    s = settings_from_args(parser.parse_args(flags))
    assert (s.gpu_provider, str(s.trt_cache_dir)) == ("tensorrt", "/x")
    with pytest.raises(ValueError, match="gpu_provider tensorrt runs on CUDA devices"):
        Settings.load({"ROI_GPU_PROVIDER": "tensorrt"})  # devices: cpu
    with pytest.raises(ValueError, match="gpu_provider"):
        Settings.load({"ROI_DEVICES": "cuda:0", "ROI_GPU_PROVIDER": "openvino"})


def test_a_tensorrt_worker_without_tensorrt_says_so() -> None:
    """The worker process itself, as the pool starts it: where ONNX Runtime has no TensorRT
    provider it reports ``failed`` with the reason (the pool shows it in /health and /ready)."""
    import multiprocessing as mp

    import onnxruntime

    from service.worker import WorkerConfig, worker_main

    if "TensorrtExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the TensorRT provider: the worker would load")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=True)
    config = WorkerConfig(
        slot=0, engine="ppocr", provider="tensorrt", threads=1, max_pages=5,
        batch_max_size=1, batch_max_wait_ms=0, env={"CUDA_VISIBLE_DEVICES": "0"},
    )  # fmt: skip
    process = ctx.Process(target=worker_main, args=(child, config), daemon=True)
    process.start()
    child.close()
    try:
        assert parent.poll(120), "the worker said nothing in 120 s"
        kind, reason = parent.recv()
        assert kind == "failed"
        assert "TensorrtExecutionProvider is not available" in reason and "roi[gpu]" in reason
        process.join(30)
        assert process.exitcode == 0  # it returned after saying so
    finally:
        if process.is_alive():
            process.kill()


def _pool(settings: Settings) -> WorkerPool:
    """A pool that is never started (its constructor needs no event loop or processes)."""
    return WorkerPool(settings)


@pytest.mark.parametrize(
    ("text", "pages"),
    [(None, None), ("", None), ("1", [1]), ("1,3-4", [1, 3, 4]), (" 2 , 1-2 ", [1, 2])],
)
def test_parse_pages(text: str | None, pages: list[int] | None) -> None:
    assert parse_pages(text) == pages


@pytest.mark.parametrize("text", ["0", "a", "3-1", "1,,2", "-1", "1-", "1-100000"])
def test_parse_pages_rejects(text: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_pages(text)
    assert info.value.status == 400 and "pages" in info.value.detail


def test_a_party_registry_is_read_before_the_service_starts(tmp_path) -> None:
    bad = tmp_path / "parties.csv"
    bad.write_text("tax_id,name\n91310000MA1FL0XX70,甲公司\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"parties: .*line 2: tax id 91310000MA1FL0XX70"):
        Settings.load({"ROI_PARTIES": str(bad)})
    good = tmp_path / "good.csv"
    good.write_text("tax_id,name\n91310000MA1FL0XX7Y,甲公司\n", encoding="utf-8")
    s = Settings.load({"ROI_PARTIES": str(good)})
    assert f'"parties": "{good}"' in s.describe()
    config, _ = _pool(s)._config(0)
    assert config.parties == str(good)  # each worker's Extractor reads it


def test_check_print_reaches_every_worker() -> None:
    assert not Settings.load({}).check_print  # the QR code's fields taken from it unread
    s = Settings.load({"ROI_CHECK_PRINT": "1"})
    assert s.check_print and '"check_print": true' in s.describe()
    config, _ = _pool(s)._config(0)
    assert config.check_print  # each worker's Extractor reads the print too
    with pytest.raises(ValueError, match="check_print"):
        Settings.load({"ROI_CHECK_PRINT": "perhaps"})


def test_learning_the_parties_reaches_every_worker() -> None:
    assert not Settings.load({}).learn_parties  # each request stands alone
    s = Settings.load({"ROI_LEARN_PARTIES": "true"})
    assert s.learn_parties and '"learn_parties": true' in s.describe()
    config, _ = _pool(s)._config(0)
    assert config.learn_parties  # each worker's Extractor learns


def test_cpu_workers_can_share_one_fallback_process() -> None:
    """``fallback_process``: by default each worker reads its own fallback pages; ``shared``
    has a CPU pool start one full-page OCR process, and each worker is told where it listens;
    shared on GPUs is refused at start, saying what to set."""
    shared = _pool(Settings.load({"ROI_FALLBACK_PROCESS": "shared"}, workers=2))
    assert shared.fullpage is not None and not shared.fullpage.alive  # started by start()
    assert shared.fullpage.threads == shared.settings.fallback_threads
    one_each = Settings.load({}, workers=2, threads_per_worker=1)
    assert one_each.fallback_threads == min(2, os.cpu_count() or 1)  # a waiting worker's core
    assert {shared._config(i)[0].fullpage for i in range(2)} == {shared.fullpage.address}
    # a page gives up on it (500) before its worker, waiting, would be killed as hung (504)
    assert shared._config(0)[0].fullpage_wait_s < shared.settings.request_timeout_s
    assert '"fallback_process": "shared"' in shared.settings.describe()
    for settings in (Settings.load({}, workers=2), Settings.load({}, devices="cuda:0")):
        pool = _pool(settings)
        assert pool.fullpage is None and pool._config(0)[0].fullpage is None
    with pytest.raises(ValueError, match="fallback_process shared is for CPU pools"):
        Settings.load({}, devices="cuda:0", fallback_process="shared")
    with pytest.raises(ValueError, match="fallback_process"):
        Settings.load({"ROI_FALLBACK_PROCESS": "nearby"})
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--fallback-process", "shared"])
    assert settings_from_args(args).fallback_process == "shared"
