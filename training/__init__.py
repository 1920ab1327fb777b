"""The bundled reference pretraining (installed as msdoctor.training).

Only ``config`` is importable without MindSpore; the model and trainer import
it when they run.
"""
