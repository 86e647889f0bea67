"""Modeled user CPU, system CPU and elapsed time of Distributed INGRES on VAX 11/780s and 11/750s
(Stonebraker et al., "Performance Analysis of Distributed Data Base Systems", 1983).

The paper reports three times per machine (Tables 1, 3 and 4): *user* time, the CPU spent in
INGRES's own code; *system* time, the CPU spent inside 4.1cBSD on INGRES's behalf; and the
*elapsed* time of the benchmark. This module prices work that ``minidb.experiments.ingres``
counted on real relations into those three times, with the constants of a hardware profile
(``vax780_ethernet``, ``vax750_ethernet`` in ``minidb.cost.profiles``):

    user    = (commands x (instr_command - instr_slave_command)
               + executions x instr_slave_command
               + distributed commands x instr_dist_command
               + tuples examined x instr_query_tuple + joined tuples x instr_substitution) / mips
    system  = ((KiB moved by system calls + log forces) x instr_os_kb
               + updates x instr_os_update
               + message ends x instr_control_message + packets x instr_packet) / mips
    disk    = sequential KiB x sequential_page_s(1 KiB)
              + (random blocks + updates x deferred_update_ios + log forces)
              x random_page_s(1 KiB)
    busy    = user + system + disk       (one process at a time: 4.1cBSD overlaps nothing here)

Where the pieces come from:

* §2: a *master* INGRES parses and plans a command at the site where it was typed; *slaves*
  (single-site INGRES without a parser) run it where the data is. A command's fixed work
  (``instr_command``) is split between them: the slave's part (``instr_slave_command``: setting
  up and running the query it was sent) is paid once per slave that runs the command
  (``executions``), the rest by the master. Normal INGRES does both parts in one process set, so
  the split shows only when master and slave are on different machines (Table 1's foreign data
  base, where the 11/780 runs nothing but slaves). Master and slave talk by messages: the query
  and "done" for a retrieve; an update is committed by the commit protocol (two-phase commit in
  the paper, §2), whose messages and log forces ``minidb.experiments.ingres`` counts by running
  the registered protocol on the simulated network with one participant: the 2PC's four
  messages (the prepare carries the update, then "ready", "commit", "done"), one forced log
  write at the master and two at the slave. A forced log write is one 1 KiB block written at
  random and waited for. Normal INGRES has no master/slave pair and no commit protocol (its
  deferred-update file is its recovery), only the pipe between the terminal monitor and the DBMS
  (the command in, "done" back).
* §3: Distributed INGRES checks the distribution criteria of each command at run time
  (``instr_dist_command``). Each update of normal INGRES goes through a deferred-update (batch)
  file: the OS work and the synchronous I/Os that costs are ``instr_os_update`` and
  ``deferred_update_ios``.
* §4: a retrieve's result goes to the master: through a pipe or a local message when the slave
  is on the master's machine, else the slave writes it into a temporary file and the file is
  copied across the network (two copies of the relation). The copy's receiving end is the
  operating system's copy daemon, not INGRES (the foreign master's 0:03 of CPU in Table 3), so it
  counts in the elapsed time only. A copy is pipelined: it takes the longest of its sender's
  work, its receiver's work and its bytes on the 3 Mbit/s wire.
* §5: a join is solved by tuple substitution over the smaller relation (DEPT); each substituted
  query reaches EMP through its hash structure. In the 2- and 3-site cases every site first sends
  its DEPT fragment to every other site (no broadcast in 4.1cBSD, §2), one transfer after another.
  When EMP is the relation sent instead, the copy is a heap and each substituted query scans it:
  the same prices apply (a tuple examined, a KiB read), there are just far more of them.

Elapsed time:

* one command (retrieve, join): master's work, then the DEPT transfers (joins), then the slaves
  in parallel, each followed by its result's copy when it is remote: ``master + transfers +
  max over slaves (slave + copy)``;
* the update scripts (Table 1): each site's script runs its commands one after the other; a
  command takes its master's work, its slave's work and, when the slave is remote, its four
  messages on the wire. A site also serves other sites' remote updates (their slaves' CPU time)
  on its one CPU, but part of that fits into the time its own script sits idle, waiting on a
  remote slave and the wire (``served_elapsed``). Assumed: the other sites' requests arrive
  independently of the site's own script, so the share of them that finds the site idle is the
  share of its elapsed time spent idle. That is a mean-value estimate (no queueing, no
  variance), and it lies between perfect overlap (served work hidden in the idle time as far as
  it fits) and none (served work added in full).

Left out on purpose: buffer caching (every block INGRES requests is a read system call and a
disk access), contention on the Ethernet (the paper finds bandwidth never matters), and the
machines' differing disks and memories (§3 warns of the random variation they cause).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minidb.cost.profiles import HardwareProfile

KIB = 1024
"""INGRES's block: §4 calls the 30,000 x 38-byte EMP relation '1200 blocks', 1 KiB each."""

EMP_BYTES, DEPT_BYTES = 38, 18
"""Tuple sizes of §3; a joined tuple (E.all, D.all) is their sum."""
JOINED_BYTES = EMP_BYTES + DEPT_BYTES

UPDATE_MESSAGES = 4
"""Master-slave messages of one distributed update under two-phase commit with one participant:
the prepare (carrying the update), ready, commit, done (§2). Used for the calibration's paper
work; the experiment counts the messages of the protocol it runs."""
RETRIEVE_MESSAGES = 2
"""Master-slave messages of one retrieve: query and done (§2)."""
MONITOR_MESSAGES = 2
"""Terminal monitor <-> INGRES pipe messages per command: the command and "done"."""


@dataclass
class Work:
    """What INGRES did at one site for one role, counted on minidb's relations."""

    commands: float = 0.0
    """User commands parsed, planned and committed here (the master, or normal INGRES)."""
    executions: float = 0.0
    """Commands a slave ran here (its part of a command's fixed work; normal INGRES: one per
    command, done by the same process set)."""
    dist_commands: float = 0.0
    """Of those, commands Distributed INGRES checked against the distribution criteria."""
    updates: float = 0.0
    """Update commands applied here (each with its deferred-update file)."""
    tuples: float = 0.0
    """Tuples examined by one-variable queries (scanned or found through a hash bucket)."""
    joined: float = 0.0
    """Result tuples formed by tuple substitution (the join)."""
    kb_seq: float = 0.0
    """KiB read or written sequentially on disk (a scan, a temporary file)."""
    blocks_random: float = 0.0
    """Blocks read or written at random on disk (a hash bucket)."""
    kb_random: float = 0.0
    """KiB of those random blocks."""
    kb_ipc: float = 0.0
    """KiB through a pipe or a local message, counted at the sender and at the receiver."""
    messages: float = 0.0
    """Control-message ends: a message counts once at its sender and once at its receiver."""
    packets: float = 0.0
    """Network packets sent or received here."""
    log_forces: float = 0.0
    """Log records forced to disk by the commit protocol (each one block, written and waited
    for)."""

    def __add__(self, other: Work) -> Work:
        return Work(**{f.name: getattr(self, f.name) + getattr(other, f.name)
                       for f in fields(self)})

    def scaled(self, factor: float) -> Work:
        """Every count times ``factor`` (a run at ``scale`` priced at the paper's size)."""
        return Work(**{f.name: getattr(self, f.name) * factor for f in fields(self)})


@dataclass(frozen=True)
class Times:
    """Modeled seconds of one site: user CPU, system CPU, and disk waits."""

    user: float
    system: float
    disk: float

    @property
    def busy(self) -> float:
        return self.user + self.system + self.disk


def times(profile: HardwareProfile, work: Work) -> Times:
    """User CPU, system CPU and disk time of ``work`` on ``profile`` (the module's formulas)."""
    ips = profile.mips * 1e6
    user = (work.commands * (profile.instr_command - profile.instr_slave_command)
            + work.executions * profile.instr_slave_command
            + work.dist_commands * profile.instr_dist_command
            + work.tuples * profile.instr_query_tuple
            + work.joined * profile.instr_substitution) / ips
    system = ((work.kb_seq + work.kb_random + work.kb_ipc + work.log_forces) * profile.instr_os_kb
              + work.updates * profile.instr_os_update
              + work.messages * profile.instr_control_message
              + work.packets * profile.instr_packet) / ips
    disk = (work.kb_seq * profile.sequential_page_s(KIB)
            + (work.blocks_random + work.updates * profile.deferred_update_ios
               + work.log_forces) * profile.random_page_s(KIB))
    return Times(user, system, disk)


def packets(profile: HardwareProfile, nbytes: float) -> float:
    """Packets that carry ``nbytes`` (at least one)."""
    return max(1, math.ceil(nbytes / profile.packet_bytes))


def wire_s(profile: HardwareProfile, nbytes: float, npackets: float) -> float:
    """Seconds on the Ethernet: the bits at its rate plus each packet's latency."""
    return nbytes * 8 / (profile.net_mbit_s * 1e6) + npackets * profile.packet_latency_ms / 1e3


def message_wire_s(profile: HardwareProfile) -> float:
    """Seconds on the wire of one remote control message (one full packet)."""
    return wire_s(profile, profile.packet_bytes, 1)


@dataclass(frozen=True)
class Copy:
    """A file of ``kb`` KiB copied from site ``source`` to site ``target`` (§4)."""

    source: int
    target: int
    kb: float

    def sender_work(self, profile: HardwareProfile) -> Work:
        """The sending INGRES reads the file and sends its packets."""
        return Work(kb_seq=self.kb, packets=packets(profile, self.kb * KIB))

    def receiver_work(self, profile: HardwareProfile) -> Work:
        """The receiving copy daemon takes the packets and writes the file."""
        return Work(kb_seq=self.kb, packets=packets(profile, self.kb * KIB))

    def elapsed(self, sender: HardwareProfile, receiver: HardwareProfile) -> float:
        """Pipelined: the slowest of sender, receiver and wire."""
        nbytes = self.kb * KIB
        return max(times(sender, self.sender_work(sender)).busy,
                   times(receiver, self.receiver_work(receiver)).busy,
                   wire_s(sender, nbytes, packets(sender, nbytes)))


@dataclass
class CommandRun:
    """One command (a retrieve or a join) over ``len(sites)`` machines, counted.

    ``slave[s]`` is the query work at site ``s`` (its result written to a pipe, a local message
    or a temporary file as the experiment counted); ``results_kb[s]`` is the result a remote
    slave copies to the master's site; ``moves`` are the copies made before the query (DEPT's
    fragments in a 2- or 3-site join); ``move_loads[s]`` is the work of turning the received
    copies into a relation at ``s``."""

    sites: list[HardwareProfile]
    master: int
    master_work: Work
    slave: dict[int, Work]
    results_kb: dict[int, float] = field(default_factory=dict)
    moves: list[Copy] = field(default_factory=list)
    move_loads: dict[int, Work] = field(default_factory=dict)


@dataclass(frozen=True)
class Priced:
    """Per site: (user, system) CPU seconds as the paper reports them; and elapsed seconds (one
    number for a command, one per site for the update scripts)."""

    cpu: list[tuple[float, float]]
    elapsed: list[float]


def price_command(run: CommandRun) -> Priced:
    """User and system time per site and the elapsed time of one command (module docstring)."""
    n = len(run.sites)
    ingres = [Work() for _ in range(n)]  # what each site's INGRES processes did
    ingres[run.master] = ingres[run.master] + run.master_work
    for s, w in run.slave.items():
        ingres[s] = ingres[s] + w
    copies = [Copy(s, run.master, kb) for s, kb in run.results_kb.items()]
    for c in [*run.moves, *copies]:
        ingres[c.source] = ingres[c.source] + c.sender_work(run.sites[c.source])
    for s, w in run.move_loads.items():
        ingres[s] = ingres[s] + w
    site_times = [times(run.sites[s], ingres[s]) for s in range(n)]

    elapsed = times(run.sites[run.master], run.master_work).busy
    elapsed += sum(c.elapsed(run.sites[c.source], run.sites[c.target]) for c in run.moves)
    elapsed += max((times(run.sites[s], run.move_loads[s]).busy if s in run.move_loads else 0.0)
                   for s in range(n))
    slowest = 0.0
    for s, w in run.slave.items():
        t = times(run.sites[s], w).busy
        if s in run.results_kb:
            copy = Copy(s, run.master, run.results_kb[s])
            t += copy.elapsed(run.sites[s], run.sites[run.master])
        slowest = max(slowest, t)
    elapsed += slowest
    return Priced([(t.user, t.system) for t in site_times], [elapsed])


@dataclass(frozen=True)
class UpdateCommand:
    """One update of a Table 1 script: typed at ``origin``, its tuple stored at ``target``;
    ``slave`` is the work of applying it (counted on the relation)."""

    origin: int
    target: int
    slave: Work


@dataclass(frozen=True)
class CommitCost:
    """What the commit protocol does to commit one update with one slave: its messages (each
    counted at both ends) and the log records it forces at the master (the coordinator) and at
    the slave (the participant). ``minidb.experiments.ingres.commit_cost`` counts them by running
    a registered protocol on the simulated network."""

    messages: int
    master_forces: int
    slave_forces: int


def update_parts(update: UpdateCommand, distributed: bool,
                 commit: CommitCost | None = None) -> tuple[Work, Work]:
    """The master's and the slave's work of one update (§2, §3): normal INGRES is one process
    set talking to its terminal monitor; Distributed INGRES adds the run-time check and the
    commit protocol's messages (their two ends at the origin and the target) and log forces."""
    master = Work(commands=1, messages=2 * MONITOR_MESSAGES)
    slave = Work(executions=1) + update.slave
    if distributed:
        if commit is None:
            raise ValueError("a distributed update needs the commit protocol's cost (CommitCost)")
        master.dist_commands = 1
        master.messages += commit.messages
        slave.messages += commit.messages
        master.log_forces += commit.master_forces
        slave.log_forces += commit.slave_forces
        if update.origin != update.target:  # each message is a packet on the Ethernet
            master.packets += commit.messages
            slave.packets += commit.messages
    return master, slave


def served_elapsed(latency: float, served: float, idle: float) -> float:
    """A site's elapsed time for its update script when it also serves other sites' requests.

    ``latency`` is the script on its own (its commands one after the other), ``idle`` the part
    of that time in which the site's CPU waits for another site (a remote slave's work and the
    commit messages on the wire), ``served`` the CPU time the site gives other sites' slaves.
    Those requests do not arrive in step with the site's own script, so a request finds the site
    idle with the probability that a random instant of the run does: ``idle / E``. The served
    work that comes while the site is idle fills that idle time; the rest delays the script:

        E = latency + served x (1 - idle / E)

    whose larger root is returned. It is a mean-value estimate (queueing and the spread of the
    arrivals are left out) and stays between the two extremes: perfect overlap, ``latency +
    max(0, served - idle)`` (served work packed into the idle time as far as it fits; reached
    when ``idle`` is all of ``latency``), and none, ``latency + served`` (the value when ``idle``
    is 0). With ``served`` at 0 it is ``latency``.
    """
    if idle < 0.0 or idle > latency * (1 + 1e-9) or served < 0.0:
        raise ValueError(f"need 0 <= idle <= latency and served >= 0, got latency={latency}, "
                         f"served={served}, idle={idle}")
    total = latency + served
    return (total + math.sqrt(max(total * total - 4.0 * served * idle, 0.0))) / 2.0


def price_updates(sites: list[HardwareProfile], commands: list[UpdateCommand],
                  distributed: bool, factor: float = 1.0,
                  commit: CommitCost | None = None) -> Priced:
    """User and system time per site and each site's elapsed time for its script (the module
    docstring); every count is multiplied by ``factor`` (a scaled run at the paper's size)."""
    n = len(sites)
    ingres = [Work() for _ in range(n)]
    latency = [0.0] * n
    idle = [0.0] * n  # the part of latency[s] spent waiting on another site
    served = [Work() for _ in range(n)]  # work done for another site's script
    for u in commands:
        master, slave = (w.scaled(factor) for w in update_parts(u, distributed, commit))
        ingres[u.origin] = ingres[u.origin] + master
        ingres[u.target] = ingres[u.target] + slave
        latency[u.origin] += (times(sites[u.origin], master).busy
                              + times(sites[u.target], slave).busy)
        if u.origin != u.target:
            wire = commit.messages * message_wire_s(sites[u.origin]) * factor
            latency[u.origin] += wire
            idle[u.origin] += times(sites[u.target], slave).busy + wire
            served[u.target] = served[u.target] + slave
    site_times = [times(sites[s], ingres[s]) for s in range(n)]
    elapsed = []
    for s in range(n):
        other = times(sites[s], served[s])
        elapsed.append(served_elapsed(latency[s], other.user + other.system, idle[s]))
    return Priced([(t.user, t.system) for t in site_times], elapsed)


# -- Calibration -----------------------------------------------------------------------------------
# Eight constants no paper states are each derived from ONE published cell of normal (single-site)
# INGRES or of Distributed INGRES on a local data base, in this order, each given the ones before:
# the work the paper's sizes imply (below) is priced with the constant at 0 and at 1, and the
# constant is the value that lands the modeled time on the cell (every time is linear in it).

EMP_TUPLES, DEPT_TUPLES, UPDATES, EMP_BLOCKS = 30_000, 1_500, 1_000, 1_200  # §3, §4
RETRIEVE_OUT_KB = EMP_TUPLES * EMP_BYTES / KIB
JOIN_OUT_KB = EMP_TUPLES * JOINED_BYTES / KIB

#: the work of the paper's single-site benchmarks, from its stated sizes: a retrieve scans the
#: 1,200 blocks and pipes 30,000 tuples to the monitor; an update reads and writes one hashed
#: block; the join scans DEPT and substitutes each tuple into a hashed query on EMP
PAPER_WORK: dict[str, Work] = {
    "retrieve": Work(commands=1, executions=1, tuples=EMP_TUPLES, kb_seq=EMP_BLOCKS,
                     kb_ipc=2 * RETRIEVE_OUT_KB, messages=2 * MONITOR_MESSAGES),
    "update": Work(commands=UPDATES, executions=UPDATES, updates=UPDATES, tuples=UPDATES, blocks_random=2 * UPDATES,
                   kb_random=2 * UPDATES, messages=2 * MONITOR_MESSAGES * UPDATES),
    "join": Work(commands=1, executions=1, tuples=DEPT_TUPLES + EMP_TUPLES, joined=EMP_TUPLES,
                 kb_seq=DEPT_TUPLES * DEPT_BYTES / KIB, blocks_random=DEPT_TUPLES,
                 kb_random=DEPT_TUPLES, kb_ipc=2 * JOIN_OUT_KB, messages=2 * MONITOR_MESSAGES),
}
PAPER_WORK["update_distributed"] = PAPER_WORK["update"] + Work(
    dist_commands=UPDATES, messages=2 * UPDATE_MESSAGES * UPDATES)
#: the 11/780's user work on a foreign data base (§3): it runs only the slaves, which execute
#: the 1,000 updates (one tuple each) that the 11/750's master parsed and sent
PAPER_WORK["update_foreign_slave"] = Work(executions=UPDATES, tuples=UPDATES)

#: (constant, cell (reference, row, column), published seconds, paper work, which time);
#: the order is the order of derivation
CALIBRATION = (
    ("instr_query_tuple", ("Table 3", "normal_ingres_11_780", "user_time"), 104, "retrieve",
     "user"),
    ("instr_os_kb", ("Table 3", "normal_ingres_11_780", "system_time"), 15, "retrieve",
     "system"),
    ("instr_command", ("Table 1", "normal_ingres_11_780", "user_time"), 454, "update", "user"),
    ("instr_os_update", ("Table 1", "normal_ingres_11_780", "system_time"), 184, "update",
     "system"),
    ("deferred_update_ios", ("Table 1", "normal_ingres_11_780", "elapsed_time"), 1354, "update",
     "busy"),
    ("instr_substitution", ("Table 4", "normal_ingres_11_780", "user_time"), 521, "join", "user"),
    ("instr_dist_command", ("Table 1", "dist_local_db_11_780", "user_time"), 546,
     "update_distributed", "user"),
    ("instr_slave_command", ("Table 1", "dist_foreign_db_11_780", "user_time"), 334,
     "update_foreign_slave", "user"),
)


def calibrate(base: HardwareProfile) -> tuple[dict[str, float], dict[str, str]]:
    """The calibrated constants of ``base`` (the VAX 11/780), with their source strings."""
    import dataclasses

    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    profile = base
    for name, (ref, row, col), seconds, work_name, part in CALIBRATION:
        work = PAPER_WORK[work_name]

        def modeled(value: float, name=name, work=work, part=part, profile=profile) -> float:
            t = times(dataclasses.replace(profile, **{name: value}), work)
            return getattr(t, part)

        at0, at1 = modeled(0.0), modeled(1.0)
        values[name] = (seconds - at0) / (at1 - at0)
        profile = dataclasses.replace(profile, **{name: values[name]})
        sources[name] = (f"calibrated: {ref} {row} {col} ({seconds} s), solved for this constant "
                         f"on the paper-size '{work_name}' work of minidb.cost.ingres_model."
                         f"PAPER_WORK, given the constants derived before it")
    return values, sources
