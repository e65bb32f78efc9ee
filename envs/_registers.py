"""The vector env's traffic with its World program's registers (tasks/term_program.py).

Two ways, one interface:

- :class:`HostRegisters`: the registers as a numpy array (on a CPU World their own memory,
  elsewhere a copy written back), read and written in place;
- :class:`DeviceRegisters`, for torch outputs from a World whose registers live on a
  device (CUDA): actions, reset overrides and commands written into their columns by one
  kernel each, observations, rewards and reward terms read into torch tensors on the
  device (one kernel gathers their columns), and only the termination and finiteness flags
  copied to the host, where the env's bookkeeping runs. No full table crosses to the host.

Each also does the few array operations the env's step applies to what it read (numpy
arrays or torch tensors), so the env's logic is written once.
"""

from __future__ import annotations

import numpy as np
from taigym.physics.runtime.device_io import torch_device
from taigym.tasks.term_program import StepOutputs


class HostRegisters:
    """The registers as numpy: observations, rewards and reward terms as float64 arrays."""

    def __init__(self, world, program, obs_dtype):
        self.world, self.program, self.obs_dtype = world, program, obs_dtype

    def read(self):
        return self.world.registers()

    def write(self, regs) -> None:
        if not self.world.registers_shared():  # a copy (not a CPU World): write it back
            self.world.set_registers(regs)

    def write_inputs(self, actions, rows) -> None:
        """Every env's actions, then ``rows``, each (env ids, first register, values)."""
        p = self.program
        self.write_rows([(slice(None), p.action.start, actions), *rows])

    def write_rows(self, rows) -> None:
        """``rows``, each (env ids, first register, values)."""
        regs = self.read()
        for ids, start, values in rows:
            regs[ids, start : start + np.shape(values)[1]] = values
        self.write(regs)

    def outputs(self) -> StepOutputs:
        return self.program.outputs(self.read())

    def shift_commands(self) -> None:
        """Each command's next value becomes its current one, in every env."""
        p = self.program
        regs = self.read()
        for name, now in p.commands_now.items():
            nxt = p.commands_next[name]
            regs[:, now.start : now.stop] = regs[:, nxt.start : nxt.stop]
        self.write(regs)

    def observations(self, ids):
        """The observations of envs ``ids`` as the registers hold them, float64."""
        p = self.program
        return self.read()[ids, p.obs.start : p.obs.stop].astype(np.float64)

    # the step's array operations on what the registers gave
    def empty_obs(self, num_envs: int, size: int):
        return np.zeros((num_envs, size))

    def put_rows(self, a, ids, rows) -> None:
        a[ids] = rows

    def copy_rows(self, a, src, ids) -> None:
        a[ids] = src[ids]

    def zero_rows(self, a, ids) -> None:
        a[ids] = 0

    def zeroed(self, mask, value):
        """``value`` with the entries where ``mask`` (a host bool array) holds set to zero."""
        return np.where(mask, 0.0, value)

    def obs_out(self, obs):
        """A copy of observations in the observation space's dtype."""
        return obs.astype(self.obs_dtype)


class DeviceRegisters(HostRegisters):
    """The registers on the World's device: observations in the observation space's dtype,
    rewards and reward terms as float64 tensors there; the flags on the host."""

    def __init__(self, world, program, obs_dtype):
        import torch

        super().__init__(world, program, obs_dtype)
        self.torch = torch
        self.device = torch_device(world.device)
        p = program
        # one gather a step: the observations, the reward, each reward term, the two flags
        self._columns = np.array([*range(p.obs.start, p.obs.stop), p.reward.start, *p.part_columns,
                                  p.terminated.start, p.nonfinite.start], dtype=np.int32)
        self._obs_dtype = getattr(torch, np.dtype(obs_dtype).name)

    def write_inputs(self, actions, rows) -> None:
        p = self.program
        self.world.set_register_rows(p.action.start, actions)
        self.write_rows(rows)

    def write_rows(self, rows) -> None:
        for ids, start, values in rows:
            self.world.set_register_rows(start, np.asarray(values, dtype=np.float64), env_ids=ids)

    def outputs(self) -> StepOutputs:
        p = self.program
        got = self.world.register_tensor(self._columns)
        nobs = p.obs.stop - p.obs.start
        obs = got[:, :nobs].to(self._obs_dtype)
        values = got[:, nobs : nobs + 1 + len(p.part_names)].to(self.torch.float64)
        flags = got[:, -2:].cpu().numpy()
        return StepOutputs(obs, values[:, 0].clone(), p.summed_parts(values[:, 1:]), flags[:, 0] != 0,
                           flags[:, 1] == 0)

    def shift_commands(self) -> None:
        p = self.program
        for name, now in p.commands_now.items():
            nxt = p.commands_next[name]
            values = self.world.register_tensor(np.arange(nxt.start, nxt.stop, dtype=np.int32))
            self.world.set_register_rows(now.start, values)

    def observations(self, ids):
        p = self.program
        got = self.world.register_tensor(np.arange(p.obs.start, p.obs.stop, dtype=np.int32))
        return got[self.torch.as_tensor(np.asarray(ids), device=self.device)].to(self._obs_dtype)

    def empty_obs(self, num_envs: int, size: int):
        return self.torch.zeros((num_envs, size), dtype=self._obs_dtype, device=self.device)

    def _index(self, ids):
        return self.torch.as_tensor(np.asarray(ids, dtype=np.int64), device=self.device)

    def put_rows(self, a, ids, rows) -> None:
        a[self._index(ids)] = rows

    def copy_rows(self, a, src, ids) -> None:
        index = self._index(ids)
        a[index] = src[index]

    def zero_rows(self, a, ids) -> None:
        a[self._index(ids)] = 0

    def zeroed(self, mask, value):
        return self.torch.where(self.torch.as_tensor(mask, device=self.device), 0.0, value)

    def obs_out(self, obs):
        return obs.clone()


def registers_for(world, program, obs_dtype, device_outputs: bool) -> HostRegisters:
    """DeviceRegisters for torch outputs from a World whose registers are a device's (where the
    env adds no host-side noise or pixels to what it reads), else HostRegisters."""
    cls = DeviceRegisters if device_outputs and not world.registers_shared() else HostRegisters
    return cls(world, program, obs_dtype)
