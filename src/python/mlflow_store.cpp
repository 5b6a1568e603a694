#include "verl/python/mlflow_store.h"

namespace verl::python {

const char* const kMlflowTrackingUriSource = R"PY(
import importlib.util
import os


def verl_mlflow_tracking_uri(mlflow, destination):
    """Sets verl's tracking URI on `mlflow`; returns it and a note ("" unless it fell back to ./mlruns)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    note = ""
    if not uri:
        if importlib.util.find_spec("sqlalchemy") is not None:
            uri = "sqlite:////tmp/mlruns.db"
        else:
            uri = "file:" + os.path.abspath("mlruns")
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for an opt-in
            note = f"MLFLOW_TRACKING_URI not set and no SQL store installed: {destination} {uri}"
    mlflow.set_tracking_uri(uri)
    return uri, note
)PY";

}  // namespace verl::python
