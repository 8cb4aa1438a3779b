"""Settings: AutoMem-compatible names read once from the environment; bad values stop the service clearly."""

from pathlib import Path

import pytest

from consolidation.settings import SettingsError, load_settings

TOKEN = "a-long-enough-admin-token"


def test_defaults_follow_the_design():
    settings = load_settings({"ADMIN_API_TOKEN": TOKEN})
    assert settings.falkordb_host is None and settings.falkordb_port == 6379 and settings.falkordb_graph == "memories"
    assert settings.qdrant_url is None and settings.qdrant_collection == "memories" and settings.vector_size == 384
    assert settings.data_dir == Path("data")
    assert settings.consolidation_tick_seconds == 60
    assert settings.task_intervals == {"decay": 86400, "dedup": 86400, "creative": 604800, "cluster": 2592000,
                                      "forget": 0, "entities": 0}
    assert settings.consolidation_decay_importance_threshold == 0.3
    assert settings.consolidation_history_limit == 20
    assert settings.consolidation_protected_types == ("Decision", "Insight")
    assert settings.consolidation_grace_period_days == 90
    assert settings.consolidation_archive_threshold == 0.0 and settings.consolidation_delete_threshold == 0.0
    assert settings.uses_embedded_store


def test_environment_values_are_parsed():
    settings = load_settings({
        "ADMIN_API_TOKEN": TOKEN, "FALKORDB_HOST": "graph.internal", "FALKORDB_PORT": "6380",
        "QDRANT_URL": "http://qdrant:6333", "CONSOLIDATION_PROTECTED_TYPES": "Decision, Preference ,",
        "CONSOLIDATION_DECAY_IMPORTANCE_THRESHOLD": "", "CONSOLIDATION_FORGET_INTERVAL_SECONDS": "86400",
        "WEB_CONCURRENCY": "4", "LOG_LEVEL": "debug", "UNRELATED": "ignored",
    })
    assert settings.falkordb_host == "graph.internal" and settings.falkordb_port == 6380
    assert settings.consolidation_protected_types == ("Decision", "Preference")
    assert settings.consolidation_decay_importance_threshold is None
    assert settings.task_intervals["forget"] == 86400
    assert settings.web_concurrency == 4 and settings.log_level == "DEBUG" and not settings.uses_embedded_store


@pytest.mark.parametrize("name, value, accepts", [
    ("CONSOLIDATION_TICK_SECONDS", "soon", "a number of seconds > 0"),
    ("CONSOLIDATION_DECAY_INTERVAL_SECONDS", "-5", "seconds >= 0 (0 disables)"),
    ("CONSOLIDATION_ARCHIVE_THRESHOLD", "1.5", "a relevance 0..1"),
    ("FALKORDB_PORT", "99999", "a TCP port 1..65535"),
    ("VECTOR_SIZE", "1", "an integer 2..65536"),
    ("LOG_FORMAT", "xml", "kv or json"),
])
def test_a_bad_value_names_the_variable_and_what_it_accepts(name, value, accepts):
    with pytest.raises(SettingsError) as error:
        load_settings({"ADMIN_API_TOKEN": TOKEN, name: value})
    message = str(error.value)
    assert f"{name}={value!r}" in message and accepts in message


def test_the_admin_token_is_required_and_never_echoed(tmp_path):
    with pytest.raises(SettingsError, match="ADMIN_API_TOKEN is not set"):
        load_settings({"DATA_DIR": str(tmp_path)})
    with pytest.raises(SettingsError) as error:
        load_settings({"ADMIN_API_TOKEN": "short-secret"})
    assert "short-secret" not in str(error.value) and "at least 16 characters" in str(error.value)


def test_several_workers_on_the_embedded_stores_are_refused():
    with pytest.raises(SettingsError, match="embedded stores belong to one process"):
        load_settings({"ADMIN_API_TOKEN": TOKEN, "WEB_CONCURRENCY": "3"})


def test_settings_are_frozen():
    settings = load_settings({"ADMIN_API_TOKEN": TOKEN})
    with pytest.raises(Exception):
        settings.vector_size = 12


def test_without_the_variable_the_token_saved_in_the_data_dir_is_used(tmp_path):
    (tmp_path / "admin_token").write_text(TOKEN + "\n")
    assert load_settings({"DATA_DIR": str(tmp_path)}).admin_api_token.get_secret_value() == TOKEN
    # The variable wins over the file; an empty variable counts as unset.
    other = "another-admin-token-0123456789"
    assert load_settings({"DATA_DIR": str(tmp_path), "ADMIN_API_TOKEN": other}).admin_api_token.get_secret_value() == other
    assert load_settings({"DATA_DIR": str(tmp_path), "ADMIN_API_TOKEN": " "}).admin_api_token.get_secret_value() == TOKEN
