"""``Agent``: a swarm member that forms a round-robin team with another by ``a | b``."""

from __future__ import annotations

from routerlab.agents.swarm.member import Member
from routerlab.agents.swarm.team import RoundTeam

__all__ = ["Agent"]


class Agent(Member):
    """One member of a swarm; ``a | b`` is a :class:`~routerlab.agents.swarm.team.RoundTeam` of both.

    Built as :class:`~routerlab.agents.swarm.member.Member` is (name, instruction, tools,
    ``instruction_args``, ``lm``), and accepted wherever a member is.
    """

    def __or__(self, other: object) -> RoundTeam:
        """``a | b``: a round-robin team of both (seed 003's ``RoundTeam``)."""
        if isinstance(other, Member):
            return RoundTeam([self, other])
        return NotImplemented
