package dev.jtrain.comm.launch;

import dev.jtrain.comm.JTrainCommException;

/** The environment or options describing a job are missing or invalid; the message names the variable and fix. */
public class RendezvousConfigException extends JTrainCommException {
    public RendezvousConfigException(String message) { super(message); }
    public RendezvousConfigException(String message, Throwable cause) { super(message, cause); }
}
