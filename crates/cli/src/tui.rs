//! The terminal dashboard (`--tui`): the live view that replaces the progress line, drawn on
//! standard error from the collector's settled intervals a few times a second, with keys that
//! steer the run through its [`Control`]. The run loop calls [`Dashboard::update`] between
//! engine events; keys are polled without waiting, so the loop never blocks on the terminal.

mod keys;
mod view;

use std::io::{BufWriter, IsTerminal, Stderr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use belier_engine::{Control, ControlError, Knob};
use belier_stats::Collector;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

use keys::Action;
use view::Show as _;
pub use view::Unit;
use view::{Snapshot, MIN_HEIGHT, MIN_WIDTH};

/// Redraw period: often enough to feel live, rarely enough to cost nothing beside the run.
const REDRAW: Duration = Duration::from_millis(250);

/// Whether the terminal is in the dashboard's mode (raw, alternate screen), so that restoring
/// it happens once, from whichever of close, drop or the panic hook comes first.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The dashboard on the terminal; the terminal is restored on [`Dashboard::close`], on drop
/// (an error unwinding the run) and on a panic.
pub struct Dashboard {
    // Buffered: standard error is not, and a frame is many small writes (flushed per frame).
    terminal: Terminal<CrosstermBackend<BufWriter<Stderr>>>,
    control: Control,
    unit: Unit,
    planned: Option<Duration>,
    steps: Vec<String>,
    workers: usize,
    help: bool,
    stopping: bool,
    notice: Option<String>,
    last_draw: Option<Instant>,
}

impl Dashboard {
    /// Takes over the terminal, or says why it cannot (not a terminal, too small), in which
    /// case the caller keeps the progress line. `workers`: those of a distributed run whose
    /// merged intervals it shows (0: the run is this process's own).
    pub fn open(
        control: Control,
        unit: Unit,
        planned: Option<Duration>,
        steps: Vec<String>,
        workers: usize,
    ) -> Result<Dashboard, String> {
        if !std::io::stderr().is_terminal() {
            return Err("standard error is not a terminal".into());
        }
        let (width, height) =
            terminal::size().map_err(|e| format!("cannot read the terminal's size: {e}"))?;
        if width < MIN_WIDTH || height < MIN_HEIGHT {
            return Err(format!(
                "the terminal is {width}×{height}, smaller than {MIN_WIDTH}×{MIN_HEIGHT}"
            ));
        }
        install_panic_hook();
        enter().map_err(|e| {
            restore();
            format!("cannot set up the terminal: {e}")
        })?;
        let terminal = Terminal::new(CrosstermBackend::new(BufWriter::new(std::io::stderr())))
            .map_err(|e| {
                restore();
                format!("cannot set up the terminal: {e}")
            })?;
        Ok(Dashboard {
            terminal,
            control,
            unit,
            planned,
            steps,
            workers,
            help: false,
            stopping: false,
            notice: None,
            last_draw: None,
        })
    }

    /// Handles the keys pressed since the last call and redraws (at most every [`REDRAW`],
    /// at once after a key). Returns true when a stop was asked for.
    pub fn update(&mut self, elapsed: Duration, collector: &Collector) -> bool {
        let mut stop = false;
        let mut pressed = false;
        // A zero timeout: only what is already there is read.
        while event::poll(Duration::ZERO).unwrap_or(false) {
            match event::read() {
                Ok(Event::Key(key)) => {
                    if let Some(action) = keys::action(&key) {
                        pressed = true;
                        stop |= self.act(action);
                    }
                }
                Ok(Event::Resize(..)) => pressed = true,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if pressed || self.last_draw.is_none_or(|t| t.elapsed() >= REDRAW) {
            self.last_draw = Some(Instant::now());
            self.draw(elapsed, collector);
        }
        stop
    }

    /// Does what `action` asks; true for a stop.
    fn act(&mut self, action: Action) -> bool {
        match action {
            Action::Stop => {
                self.stopping = true;
                self.control.stop();
                return true;
            }
            Action::Pause => {
                if self.control.state().paused {
                    self.control.resume();
                    self.notice = Some("resumed".into());
                } else {
                    self.control.pause();
                    self.notice = Some("paused".into());
                }
            }
            Action::Up | Action::Down => {
                let knob = self.control.knob();
                let now = self.control.state().level;
                let mut level = keys::stepped(knob, now, action == Action::Up);
                // A step past the run's limit stops at it; at the limit, `+` is refused.
                let most = self.control.ceiling().map(|c| c.level);
                if let Some(most) = most.filter(|&m| level > m && now < m) {
                    level = most;
                }
                self.notice = Some(match self.control.set_level(level) {
                    Ok(()) => {
                        let what = if knob == Knob::Rate { "rate" } else { "level" };
                        let limit = if Some(level) == most {
                            " (the limit)"
                        } else {
                            ""
                        };
                        format!("{what} set to {}{limit}", self.unit.show(level))
                    }
                    // The header has no room for the reason: the console and `belier
                    // --help` give it.
                    Err(ControlError::AboveCeiling { most, .. }) => {
                        format!("at the limit ({})", self.unit.show(most))
                    }
                    Err(e) => format!("not changed: {e}"),
                });
            }
            Action::Help => self.help = !self.help,
            Action::Dismiss => self.help = false,
        }
        false
    }

    fn draw(&mut self, elapsed: Duration, collector: &Collector) {
        let snapshot = Snapshot {
            elapsed,
            planned: self.planned,
            points: collector.series().points(),
            settled: collector.settled_total(),
            requests: collector.requests_so_far(),
            errors: collector.errors_so_far(),
            steer: self.control.state(),
            unit: self.unit,
            steps: &self.steps,
            stopping: self.stopping,
            notice: self.notice.as_deref(),
            help: self.help,
            workers: self.workers,
        };
        // A failed draw only costs this frame; the run goes on.
        let _ = self.terminal.draw(|frame| view::draw(frame, &snapshot));
    }

    /// Gives the terminal back as it was, so the report prints on the normal screen.
    pub fn close(self) {
        restore();
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        restore();
    }
}

fn enter() -> std::io::Result<()> {
    ACTIVE.store(true, Ordering::SeqCst);
    terminal::enable_raw_mode()?;
    execute!(
        std::io::stderr(),
        terminal::EnterAlternateScreen,
        cursor::Hide
    )
}

/// Leaves raw mode and the alternate screen, once.
fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        // Nothing more can be done if the terminal refuses: the report still prints.
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            std::io::stderr(),
            terminal::LeaveAlternateScreen,
            cursor::Show
        );
    }
}

/// Restores the terminal before a panic's message prints, so it is readable.
fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
