"""`rebuttal serve`: HTTP API, persistent review queue and reviewer page.

    from rebuttal.server import create_app, ServerSettings
    app = create_app(ServerSettings(db_url="sqlite:///rebuttal.db"))

FastAPI, SQLAlchemy and Jinja2 come with `pip install 'rebuttal[server]'`; importing this
package stays light, they load when the app is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["ServerSettings", "Services", "PipelineServices", "create_app"]

if TYPE_CHECKING:
    from rebuttal.server.app import create_app
    from rebuttal.server.services import PipelineServices, Services
    from rebuttal.server.settings import ServerSettings


def __getattr__(name: str):
    if name == "create_app":
        from rebuttal.server.app import create_app

        return create_app
    if name in ("Services", "PipelineServices"):
        from rebuttal.server import services

        return getattr(services, name)
    if name == "ServerSettings":
        from rebuttal.server.settings import ServerSettings

        return ServerSettings
    raise AttributeError(name)
