"""`play` in MuJoCo Studio: its native window, or the same session served to a browser (`--web`).

The control loop (`studio_sim.PlaySim`) runs on the calling thread; Studio's
viewer, with its own panels and `play`'s (`studio_panels.PlayPanels`), runs
on a thread of its own. The web viewer listens on loopback unless a host is
given: its page has no authentication, and whoever opens it can steer the
robot.
"""

import importlib
import ipaddress
import socket
import time
from dataclasses import dataclass

from metaworld_x.errors import UserError
from metaworld_x.play.live_session import LiveSession

LOOPBACK = "127.0.0.1"
VIEWER_START_TIMEOUT_S = 30.0


class StudioUnavailable(RuntimeError):
    """Studio's viewer could not start here (no window system, no GPU context, ...)."""


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def viewer_url(host: str, port: int) -> str:
    """The address to open: loopback's, this machine's name for every interface, else the host given."""
    if is_loopback(host):
        host = LOOPBACK
    elif host in ("0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def network_warning(host: str) -> str:
    """The one line printed when the viewer listens beyond loopback."""
    return (f"warning: --host {host} serves the viewer to the network; the page has no authentication: anyone who"
            " can reach it can watch and steer the robot")


def tunnel_hint(port: int) -> str:
    """How to watch a loopback viewer from another machine."""
    return f"from another machine: ssh -L {port}:{LOOPBACK}:{port} <this host>, then open http://localhost:{port}/"


def check_listen(host: str, port: int) -> None:
    """Refuse a host or port the viewer could not listen on, before anything heavy starts."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port} is not a port number; use 1-65535, or 0 for the first free one from 8080")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except socket.gaierror:
        raise UserError(f"--host {host!r} is not an address of this machine; use {LOOPBACK} (the default) or"
                        " 0.0.0.0 for every interface") from None
    except OSError as error:
        what = f"port {port} on {host}" if port else host
        raise UserError(f"cannot listen on {what} ({error.strerror}); choose another --port, or --port 0 for a free"
                        " one") from None


def _web_viewer_class():
    """Studio's WebViewer, bound to the host it is given (Studio's own binds every interface)."""
    from mujoco.studio import web_viewer

    class BoundWebViewer(web_viewer.WebViewer):
        def __init__(self, host: str, *args, **kwargs):
            self._bind_host = host
            super().__init__(*args, **kwargs)

        @property
        def _host(self) -> str:  # read when WebViewer binds its socket
            return self._bind_host

        @_host.setter
        def _host(self, _: str) -> None:  # WebViewer assigns "::" (every interface): keep the host given
            pass

    return BoundWebViewer


@dataclass
class StudioRun:
    """A running Studio viewer and the control loop that feeds it."""

    handle: object
    """Studio's ViewerHandle (the sim side)."""
    panels: object
    """The `PlayPanels` plugin (viewer side)."""
    session: LiveSession
    url: str | None = None
    """Where the web viewer is served; None for the native window."""

    @property
    def port(self) -> int | None:
        return self.panels.viewer.port if self.url is not None else None

    @property
    def bound_address(self) -> tuple:
        """(host, port, ...) the web viewer's socket is bound to."""
        return self.panels.viewer._http_sock.getsockname()  # Studio keeps its listening socket there

    def run(self) -> None:
        """Run the control loop until the viewer closes, Ctrl+C, or the `steps` asked for are played."""
        try:
            while self.handle.is_running() and not self.session.finished:
                self.handle.sync()
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def close(self) -> None:
        self.handle.close()


def start(session: LiveSession, web: bool, host: str = LOOPBACK, port: int = 0, title: str = "metaworld-x play",
          studio_panels: bool = False) -> StudioRun:
    """Start Studio's viewer (native, or web on host:port) with `session` playing; `run()` then drives it.

    studio_panels: also open Studio's own Options and Inspector panels (the View menu opens them later)."""
    from mujoco.studio import app as studio_app
    from mujoco.studio import launch_native, launch_thread, viewer_protocol

    from metaworld_x.play.studio_panels import PlayPanels
    from metaworld_x.play.studio_sim import PlaySim, publish

    panels, loop = PlayPanels(), PlaySim(session)
    app = studio_app.App(studio_app.Config(show_options=studio_panels, show_inspector=studio_panels))
    if web:
        viewer_class = _web_viewer_class()
        config = viewer_protocol.ViewerConfig(title=title, gfx="web", http_port=port)

        def serve(endpoint) -> None:
            viewer_protocol.run_viewer_loop(viewer_class(host, config, endpoint, plugins=[app, panels]))

        handle = launch_thread.launch_thread(serve, sim_plugins=[loop])
    else:
        try:  # the window's renderer, imported here so that a platform without it fails before a thread starts
            importlib.import_module("mujoco.studio.native_viewer")
        except Exception as error:  # e.g. Python 3.11: Studio 4.0's renderer imports collections.abc.Buffer (3.12)
            raise StudioUnavailable(f"{type(error).__name__}: {error}") from None
        handle = launch_native.launch(viewer_protocol.ViewerConfig(title=title), plugins=[app, panels, loop])
    _wait_for_viewer(handle, panels)
    publish(handle, session.runner)
    url = viewer_url(host, panels.viewer.port) if web else None
    return StudioRun(handle, panels, session, url)


def _wait_for_viewer(handle, panels) -> None:
    """Block until the viewer thread is up; a viewer that failed to start is a StudioUnavailable."""
    deadline = time.monotonic() + VIEWER_START_TIMEOUT_S
    while not panels.ready:
        try:
            running = handle.is_running()  # re-raises what ended the viewer thread
        except Exception as error:
            raise StudioUnavailable(f"{type(error).__name__}: {error}") from None
        if not running or time.monotonic() > deadline:
            handle.close()
            raise StudioUnavailable("the viewer did not start")
        time.sleep(0.01)
