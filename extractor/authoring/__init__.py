"""Template authoring: propose a template from a sample (``roi template init``), draw what a
template reads (``preview``), check a template on samples (``check``); used by the web editor."""
