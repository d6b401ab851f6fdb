"""MkDocs hooks for descent: a thin forwarder. The logic lives in ``descent.site.hooks``."""

from descent.site.hooks import (  # noqa: F401  (MkDocs finds the event handlers by name)
    on_config,
    on_files,
    on_page_content,
    on_page_markdown,
    on_post_build,
    on_post_page,
    on_post_template,
    on_pre_page,
    on_shutdown,
    on_startup,
)
